"""The session engine, our default: a durable append-only log, edits as data, and the view
derived from both (``state.py`` the view, ``passes.py`` the edits,
``engine.py`` the order, ``recall.py`` search over the whole log; message identity is
``keys.py``, below every engine)."""

from .engine import SessionEngine

__all__ = ["SessionEngine"]
