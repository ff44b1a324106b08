"""One writer per session inside a process too: appends through one store object are counted.

The lease (``lease.py``) is the process's: two ``Compactor`` objects of one process sharing
one store object could both append to one session, and the journal would interleave two
histories that no replay can rebuild. So every engine that writes a journal goes through
this table, per store object and session (its *generation*: appends so far):

* ``opened(store, session, engine)`` when an engine reads (resumes) or creates the session:
  the generation it read; ``SessionLocked`` while another live engine is inside a call on
  it (that call's records are not in the journal yet: a read now would miss them).
* ``writing(store, session, engine, generation)`` around each append: ``SessionLocked``
  when the session was appended to since ``generation`` by anyone else (that writer's view
  is stale) or another engine is inside a call on it; the check and the append hold the
  session's lock, so no other engine reads or writes between them, and the generation
  advances only when the append returned.
* ``busy(store, session, engine)`` around a call.

So of two live compactors on one session, the one that writes after the other has is
refused, with the error naming the session, and the journal holds one history. A compactor
that resumes after the other wrote takes over (optimistic, like the store's own length check
across store objects): resuming in the same process while the old object still exists is
common, and is not an error until the old one writes again. Engines are held weakly: one
that is gone is busy with nothing.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

from .base import Store
from .lease import SessionLocked

_lock = threading.Lock()


class _Session:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.generation = 0
        self.busy: weakref.ref[object] | None = None  # the engine inside a call on it

    def busy_with_other(self, engine: object) -> bool:
        current = self.busy() if self.busy is not None else None
        return current is not None and current is not engine


# The entries of each live store object, kept as long as the store itself is: a store that
# is gone takes its entries with it, and a new store never finds an old one's (as a table
# keyed by ``id()`` could, ids being reused). Stores compare by identity.
_stores: weakref.WeakKeyDictionary[Store, dict[str, _Session]] = weakref.WeakKeyDictionary()


def _entry(store: Store, session: str) -> _Session:
    with _lock:
        sessions = _stores.get(store)
        if sessions is None:
            sessions = _stores[store] = {}
        entry = sessions.get(session)  # a new entry (and its lock) only for a new session
        if entry is None:
            entry = sessions[session] = _Session()
        return entry


def _where(store: Store) -> str:
    return store.root or type(store).__name__


def _refuse(store: Store, session: str, why: str) -> SessionLocked:
    return SessionLocked(
        f"session {session!r} in {_where(store)} {why} (two live compactors on one session "
        "and store object); use one Compactor per session, or resume it again to continue"
    )


def opened(store: Store, session: str, engine: object) -> int:
    """The generation ``engine`` reads ``session`` at."""
    entry = _entry(store, session)
    with entry.lock:
        if entry.busy_with_other(engine):
            raise _refuse(store, session, "is being written by another Compactor of this process")
        return entry.generation


@contextmanager
def reading(store: Store, session: str) -> Iterator[None]:
    """Hold the session's lock while its journal is read (no append lands half-way)."""
    with _entry(store, session).lock:
        yield


@contextmanager
def writing(store: Store, session: str, engine: object, generation: int) -> Iterator[int]:
    """Around one append by ``engine``, which last saw ``generation``: the generation after
    it (valid only once the block returned)."""
    entry = _entry(store, session)
    with entry.lock:
        if entry.busy_with_other(engine) or entry.generation != generation:
            raise _refuse(
                store,
                session,
                "was written by another Compactor of this process since this one read it",
            )
        yield generation + 1
        entry.generation = generation + 1


@contextmanager
def busy(store: Store, session: str | None, engine: object) -> Iterator[None]:
    """``engine`` is inside a call on ``session`` (None: not created yet, nothing to mark)."""
    if session is None:
        yield
        return
    entry = _entry(store, session)
    with entry.lock:
        if entry.busy_with_other(engine):
            raise _refuse(store, session, "is being written by another Compactor of this process")
        entry.busy = weakref.ref(engine)
    try:
        yield
    finally:
        with entry.lock:
            entry.busy = None


__all__ = ["busy", "opened", "reading", "writing"]
