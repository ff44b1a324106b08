"""One writer per session inside a process too: appends through one store object are counted.

The lease (``lease.py``) is the process's: two ``Compactor`` objects of one process sharing
one store object could both append to one session, and the journal would interleave two
histories that no replay can rebuild. So every engine that writes a journal counts its
appends here, per store object and session (the session's *generation*):

* ``seen(store, session)`` when it reads (resumes) or creates the session;
* ``write(store, session, generation)`` before each append: ``SessionLocked`` when the
  session was appended to since ``generation`` by anyone else through this store object
  (that writer's view is stale: resume again); else the generation after the append.

So of two live compactors on one session, the one that writes after the other has is
refused, with the error naming the session, and the journal holds one history. A compactor
that resumes after the other wrote takes over (optimistic, like the store's own length check
across store objects): resuming in the same process while the old object still exists is
common, and is not an error until the old one writes again.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from .lease import SessionLocked

_lock = threading.Lock()
# id(store) -> (a weak reference to the store, {session: generation})
_stores: dict[int, tuple[weakref.ref[Any], dict[str, int]]] = {}


def _sessions(store: Any) -> dict[str, int]:
    key = id(store)
    entry = _stores.get(key)
    if entry is None or entry[0]() is not store:

        def forget(_: object, key: int = key) -> None:
            _stores.pop(key, None)

        ref = weakref.ref(store, forget)
        entry = (ref, {})
        _stores[key] = entry
    return entry[1]


def seen(store: Any, session: str) -> int:
    """The session's generation now (0 before any append through this store object)."""
    with _lock:
        return _sessions(store).get(session, 0)


def write(store: Any, session: str, generation: int) -> int:
    """Count one append by a writer that last saw ``generation``; the generation after it."""
    with _lock:
        sessions = _sessions(store)
        if sessions.get(session, 0) != generation:
            where = getattr(store, "root", None) or type(store).__name__
            raise SessionLocked(
                f"session {session!r} in {where} was written by another Compactor of this "
                "process since this one read it (two live compactors on one session and store "
                "object); use one Compactor per session, or resume it again to continue"
            )
        sessions[session] = generation + 1
        return generation + 1


__all__ = ["seen", "write"]
