"""Integrations: drop-in SDK clients (``compacting``) and framework adapters (extras).

``from context_compact.integrations import compacting`` imports no SDK: the client you pass
is already built. ``langchain.CompactionMiddleware``, ``pydantic_ai.history_processor`` and
``openai_agents.CompactingSession`` are submodules, each behind its optional extra, each
importing its framework lazily, when first used. ``Conversations`` gives each conversation
(a LangChain ``thread_id``, an Agents SDK session id, a key of yours) its own session.
"""

from __future__ import annotations

from .clients import compacting
from .conversations import Conversations

__all__ = ["Conversations", "compacting"]
