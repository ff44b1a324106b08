"""The session engine, our default: a durable append-only log, edits as data, and the view
derived from both (``state.py`` the view, ``passes.py`` the edits, ``session.py`` the durable
session composed of its parts, ``planner.py`` the compaction ladder as functions over it,
``engine.py`` their order, ``recall.py`` search over the whole log; message identity is
``keys.py``, below every engine)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import SessionEngine


def __getattr__(attribute: str) -> Any:
    # The engine is loaded when asked for, so a policy (``policy.py`` here) loads without it.
    if attribute == "SessionEngine":
        from .engine import SessionEngine

        return SessionEngine
    raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")


__all__ = ["SessionEngine"]
