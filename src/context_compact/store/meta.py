"""A session's meta: what ``create_session`` was given, and ``session_meta`` returns with ``id``
and ``created``. Its keys by who wrote the session:

    the agent, a Compactor    (no ``source``)
    import                    source "import", format, file (the path imported), name, system
    compact (the command)     source "compact", policy_name, of (the session or file replayed)

``source_of`` says it in a few words, the same for ``sessions`` and the inspector.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def source_of(meta: Mapping[str, Any]) -> str:
    """Where a session came from, in a few words: the agent, an import (its format and the
    session's name: the file's, with ``/sidechain-N`` for a sub-agent's thread), a
    compaction."""
    source = meta.get("source")
    if source == "import":
        name = meta.get("name") or Path(str(meta.get("file"))).name
        return f"import {meta.get('format')}: {name}"
    if source == "compact":
        return f"compact {meta.get('policy_name')} of {meta.get('of')}"
    return str(source or "agent")


__all__ = ["source_of"]
