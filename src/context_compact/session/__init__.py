"""The session engine, our default: a durable append-only log, edits as data, and the view
derived from both (``log.py`` identity, ``state.py`` the view, ``passes.py`` the edits,
``engine.py`` the order, ``recall.py`` search over the whole log)."""

from .engine import SessionEngine

__all__ = ["SessionEngine"]
