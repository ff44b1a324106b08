"""SqliteStore: the journal and a copy of every text in one SQLite file, files exported to root.

Its parts: the database (``sqlite/database.py``), the archive (``archive.DiskArchive``) over
its ledger of files (``sqlite/files.py``), the journal (``sqlite/sessions.py``) and its search
(``sqlite/search.py``).

The database (``sqlite/schema.py``) is the store's truth; the files under ``root`` are exports the
model opens with a plain file tool, at the same layout as ``FileStore`` (``store/codec.py``).

Invariants:

* ``append`` is one ``BEGIN IMMEDIATE`` transaction: a batch is wholly in or wholly out, also
  when the process is killed mid-way; WAL lets readers and other sessions' writers proceed.
  Inside ``turn()`` the files the turn issued are recorded in that same transaction
  (``sqlite/files.py``): one commit per turn.
  Different sessions may be appended from several processes at once (the write lock is held
  for one batch; ``busy_timeout`` waits for it); one writer per session.
* Every text is stored once: strings of 1 KiB or more in records go to ``blobs`` by hash
  (``blobrefs.py``), and so do the texts of exported files, so persisting a tool result that
  a message already holds costs only its file; stored compressed (``sqlite/blobs.py``).
* An append is one row of ``journal`` holding the batch's records and their chain links
  (``sqlite/journal.py``): a turn's commit writes one b-tree's pages for its journal.
* A file is recorded in the database before it is exported, so every issued path can be
  re-exported: ``read_text`` of a file deleted behind our back serves it from the database and
  writes it again. ``issued`` is exactly the paths in ``files`` (kept relative to root, so a
  database and its root can move together).
* One writer per session (``store/lease.py``): the first append of a process to a session takes
  its row in ``writers`` in the same transaction, and is refused with ``SessionLocked`` while
  another live process holds it; an append to a journal that grew since this store read or
  wrote it is refused too. ``close`` releases the leases.
* No symbolic link is followed: the database, its ``-wal``/``-journal``/``-shm``, a folder
  between root and it, its witnesses' and its index's are checked before SQLite opens them
  (``nofollow.py``); one there was planted and is ``LinkRefused`` naming it.
* One connection, shared by threads under a lock; ``close`` releases it. ``search`` reads a
  side index (``sqlite/search.py``); integrity checks are ``sqlite/checks.py``.
* No ``sqlite3.Error`` leaves a method: each is ``StoreRefused`` (locked, full, read-only,
  I/O) or ``CorruptStore`` (damaged), mapped by the block each method of the parts runs in
  (``store.boundary``, ``sqlite/refusals.py``); inside, SQLite's own exceptions are what the
  code catches.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

from ...errors import CorruptStore as CorruptStore
from ...errors import ReadOnlyStore as ReadOnlyStore
from ..archive import DiskArchive
from ..codec import Record
from ..composed import Composed
from ..disk import Root
from ..lease import Owner
from .database import Database
from .files import SqliteLedger
from .search import SqliteSearch
from .sessions import SqliteJournal
from .tx import CHECKPOINT_EVERY as CHECKPOINT_EVERY


class SqliteStore(Composed):
    def __init__(
        self,
        path: str | os.PathLike[str],
        root: str | os.PathLike[str] | None = None,
        durable: bool = False,
        private: bool = True,
        read_only: bool = False,
        compress: bool = True,
    ) -> None:
        self.db_path = Path(path)
        self.compress = compress
        self._place(Root(self.db_path.parent if root is None else root, durable, private))
        self.db = Database(self.db_path, self.folder, read_only)
        self.files = SqliteLedger(self.db, self.folder, compress)
        self.archive = DiskArchive(self.folder, self.files)
        self.journal = self.sessions = SqliteJournal(self.db, self.folder, self.files)
        self._search = SqliteSearch(self.sessions)

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.db_path)!r}, root={self.root!r})"

    @property
    def read_only(self) -> str | None:
        """Why writes are refused (None: they are not)."""
        return self.db.read_only

    # -- besides the doors -----------------------------------------------------------------------
    def turn(self) -> AbstractContextManager[None]:
        """The files a turn issues committed with its journal append (``sqlite/files.py``)."""
        return self.files.turn()

    def search(self, session: str, query: str) -> Iterator[Record]:
        return self._search.search(session, query)

    def delete_session(self, session: str) -> None:
        """Remove the session and its journal (``SessionLocked`` if another live process writes
        it). The files its views named stay: they are stored by content and may be shared."""
        self.sessions.delete_session(session)

    def writer(self, session: str) -> Owner | None:
        """The live process holding the session's lease, if any."""
        return self.sessions.writer(session)

    def checkpoints(self, session: str) -> list[int]:
        return self.sessions.checkpoints(session)

    def records_from(self, session: str, start: int) -> Iterator[Record]:
        return self.sessions.records_from(session, start)

    def close(self) -> None:
        self.sessions.close()
        self._search.close()
        self.db.close()


__all__ = ["CHECKPOINT_EVERY", "SqliteStore"]
