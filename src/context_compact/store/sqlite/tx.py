"""SqliteStore's connection plumbing: explicit transactions, the WAL checkpointer, damage reports.

* ``Transaction``: ``BEGIN IMMEDIATE`` ... ``COMMIT`` (the write lock taken at the start, so
  a busy database waits ``busy_timeout`` there, never fails half-way), ``ROLLBACK`` on any
  exception, also after a failed ``COMMIT``.
* ``Checkpointer``: WAL checkpoints on a background connection (PASSIVE: never blocks a
  writer), woken by the store every ``CHECKPOINT_EVERY`` appends, so no caller's append pays
  for copying the WAL back into the database (measured: an automatic checkpoint every ~90
  turns took 10-20 ms of one ``prepare``). Its second pass holds the store's appends (the
  lock it is given) for what they added during the first, so the WAL restarts; the store
  used to finish that copy itself halfway to the next wake, 7-9.5 ms of one append in 256
  (``bench --store-io``'s loop).
* ``unusable``: the one-line report for a file that is not a usable database.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from .checks import integrity

CHECKPOINT_EVERY = 256  # appends between two background WAL checkpoints (bench --store-io)


def begin(db: sqlite3.Connection, how: str = "") -> None:
    """``BEGIN`` (``how``: ``IMMEDIATE``), after rolling back a transaction that a call
    interrupted between its ``BEGIN`` and its ``COMMIT`` (a signal, a bug) left open: every
    use of the connection holds the store's lock, so an open transaction here can only be
    such a leftover, and without this every later read would fail ("cannot start a
    transaction within a transaction")."""
    if db.in_transaction:
        db.execute("ROLLBACK")
    db.execute(f"BEGIN {how}" if how else "BEGIN")


class Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, or ``ROLLBACK`` on any exception; ``after`` (set
    inside the block) runs once the commit succeeded, still under the caller's lock."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self.after: Callable[[], None] | None = None

    def __enter__(self) -> Transaction:
        begin(self._db, "IMMEDIATE")
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        try:
            if kind is None:
                self._db.execute("COMMIT")
                if self.after is not None:
                    self.after()
        finally:
            # Also after a failed COMMIT: the connection must not stay inside a transaction.
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")


class Checkpointer:
    """A daemon thread that checkpoints the WAL (PASSIVE: never blocks a writer) when woken;
    ``writes`` is the lock the store holds while it appends."""

    def __init__(self, path: str, writes: threading.Lock) -> None:
        self._path = path
        self._writes = writes
        self._event = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="sqlite-checkpoint", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._event.set()

    def stop(self) -> None:
        self._stopping = True
        self._event.set()
        self._thread.join()

    def _run(self) -> None:
        db = sqlite3.connect(self._path, timeout=5.0, isolation_level=None)
        try:
            while True:
                self._event.wait()
                self._event.clear()
                if self._stopping:
                    return
                # On failure the next wake tries again; the WAL only grows meanwhile.
                with contextlib.suppress(sqlite3.Error):
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    # The pass above races the store's next appends, so the WAL is never
                    # wholly copied when a write starts and never restarts (measured: 78 MB
                    # of WAL after 1,000 turns). A second pass with the store's appends held
                    # copies only what they added meanwhile, and lets the next write restart
                    # the WAL (cut to journal_size_limit).
                    with self._writes:
                        db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        finally:
            db.close()


def unusable(path: Path, error: object) -> str:
    """A file that is not a usable database, in one line: ``error`` is SQLite's words."""
    answer = "; ".join(integrity(path, 3))
    return f"{path}: not a usable SQLite database ({error}; integrity_check: {answer})"
