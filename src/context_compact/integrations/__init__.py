"""Integrations: drop-in SDK clients (``compacting``) and framework adapters (extras).

``from context_compact.integrations import compacting`` imports no SDK: the client you pass
is already built. The framework adapters are submodules, each behind its optional extra.
"""

from __future__ import annotations

from .clients import compacting

__all__ = ["compacting"]
