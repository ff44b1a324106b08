"""SqliteStore: the journal and a copy of every text in one SQLite file, files exported to root.

The database (``sqlite/schema.py``) is the store's truth; the files under ``root`` are exports the
model opens with a plain file tool, at the same layout as ``FileStore`` (``store/disk.py``).

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
  I/O) or ``CorruptStore`` (damaged), mapped where the method returns (``store.boundary``,
  ``sqlite/refusals.py``); inside, SQLite's own exceptions are what the code catches.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...errors import CorruptStore as CorruptStore
from ...errors import ReadOnlyStore as ReadOnlyStore
from .. import witness
from ..base import CHECKPOINT_KIND as MARK
from ..base import Record
from ..blobrefs import externalize, references
from ..boundary import maps_errors
from ..codec import dumps
from ..disk import folder_mode, make_dirs
from ..journal import SessionExists, check_records, new_meta, valid_session_id
from ..journal_rows import settled_records
from ..lease import (
    HEARTBEAT_SECONDS,
    Owner,
    SessionLocked,
    alive,
    changed_message,
    locked_message,
    same_process,
    this_process,
)
from ..nofollow import not_a_link, sqlite_files_plain
from . import blobs as sqlite_blobs
from . import checks as sqlite_checks
from . import journal as sqlite_journal
from . import tx as sqlite_tx
from .files import FileRow, SqliteFiles
from .index import SideIndex
from .refusals import of_database
from .schema import connect, connect_read_only
from .search import SqliteSearch
from .tx import CHECKPOINT_EVERY as CHECKPOINT_EVERY
from .tx import Checkpointer, Transaction, unusable


@maps_errors(of_database)
class SqliteStore(SqliteFiles, SqliteSearch):
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
        super().__init__(self.db_path.parent if root is None else root, durable, private)
        self._lock = threading.Lock()
        self._known_paths: set[str] = set()
        self._pending: list[FileRow] = []  # file rows kept for the turn's commit
        self._turns = threading.local()  # .depth: turn() blocks this thread is inside
        self._index: SideIndex | None = None  # the search index, opened by the first search
        # Why writes are refused (None: they are not): asked for, or the file cannot be written.
        self.read_only: str | None = "opened with read_only=True" if read_only else None
        # SQLite opens its files by name, following links: none may be there (nofollow.py).
        sqlite_files_plain(self.db_path, self._abs_root)
        if self.read_only is None:
            try:
                self._db = self._open_writable(durable)
            except sqlite3.OperationalError as error:
                if not self.db_path.is_file():
                    raise
                self.read_only = f"it cannot be written here ({error})"
        if self.read_only is not None:
            try:
                self._db = connect_read_only(str(self.db_path))
            except sqlite3.DatabaseError as error:
                if isinstance(error, sqlite3.OperationalError):
                    raise
                raise CorruptStore(unusable(self.db_path, error)) from error
        self._checkpointer: Checkpointer | None = None
        self._appends = 0
        self._lengths: dict[str, int] = {}  # journal length last read or written, per session
        self._leases: dict[str, float] = {}  # sessions this store holds -> last heartbeat
        self._heads: dict[str, str] = {}  # the last link of each session's journal known here
        self._witnesses = Path(f"{self.db_path}-heads")  # <session>: witness.py

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.db_path)!r}, root={self.root!r})"

    def _open_writable(self, durable: bool) -> sqlite3.Connection:
        make_dirs(self.db_path.parent, folder_mode(self.file_mode))
        if not self.db_path.exists():
            # Made here with the store's mode: SQLite gives its -wal and -shm files the same.
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            with contextlib.suppress(FileExistsError):
                os.close(os.open(self.db_path, flags, self.file_mode))
        try:
            db = connect(str(self.db_path), durable)
            # WAL checkpoints run on a background connection, not inside the caller's append
            # (measured: an automatic checkpoint every ~90 turns took 10-20 ms of one prepare).
            db.execute("PRAGMA wal_autocheckpoint = 0")
            # ...and the WAL file is cut back to 4 MiB when it restarts after a checkpoint.
            db.execute(f"PRAGMA journal_size_limit = {4 << 20}")
        except sqlite3.DatabaseError as error:
            if isinstance(error, sqlite3.OperationalError):
                raise  # locked, read-only, no such folder: not damage
            raise CorruptStore(unusable(self.db_path, error)) from error
        return db

    def _refuse_writes(self) -> None:
        if self.read_only is not None:
            raise ReadOnlyStore(
                errno.EROFS,
                f"{self.db_path} is open for reading only: {self.read_only}; writes are refused",
            )

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.stop()
        if self._index is not None:
            self._index.close()
        with self._lock:
            if self._leases:
                me = this_process()
                with contextlib.suppress(sqlite3.Error):
                    self._db.executemany(
                        "DELETE FROM writers WHERE session = ? AND pid = ? AND host = ?",
                        [(s, me.pid, me.host) for s in self._leases],
                    )
                self._leases.clear()
            self._db.close()

    # -- the session journal ---------------------------------------------------------------------
    def create_session(self, meta: dict[str, Any]) -> str:
        full = new_meta(meta)
        session: str = full["id"]
        self._refuse_writes()
        try:
            with self._lock:
                self._db.execute(
                    "INSERT INTO sessions (id, created, meta) VALUES (?, ?, ?)",
                    (session, full["created"], dumps(full)),
                )
        except sqlite3.IntegrityError:
            raise SessionExists(f"session {session!r} already exists in {self.db_path}") from None
        self._lengths[session] = 0
        return session

    def session_meta(self, session: str) -> dict[str, Any] | None:
        if not valid_session_id(session):
            return None
        with self._lock:
            row = self._db.execute("SELECT meta FROM sessions WHERE id = ?", (session,)).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def list_sessions(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT meta FROM sessions ORDER BY created DESC, rowid DESC"
            ).fetchall()
        return [json.loads(row[0]) for row in rows]

    def append(self, session: str, records: list[Record]) -> None:
        check_records(records)
        if not valid_session_id(session):
            raise KeyError(f"no session {session!r} in {self.db_path}")
        # The JSON and hashing work happens before the write lock is taken.
        blobs: dict[str, bytes] = {}
        bodies = [dumps(externalize(record, blobs)) for record in records]
        with self._lock, self._transaction() as transaction:
            found = self._db.execute("SELECT length FROM sessions WHERE id = ?", (session,))
            start = found.fetchone()
            if start is None:
                raise KeyError(f"no session {session!r} in {self.db_path}")
            taken = self._hold(session, start[0])
            # The turn's files first: no record committed names a path the database lacks.
            self._apply_pending()
            done = len(self._pending)

            def committed() -> None:
                del self._pending[:done]
                self._took(session, taken)

            transaction.after = committed
            head = self._heads.get(session)
            if head is None or self._lengths.get(session) != start[0]:
                head = self._head(session, start[0])
            links = []
            for body in bodies:
                head = witness.link(head, body.encode("ascii"))
                links.append(head)
            sqlite_blobs.insert(self._db, blobs.items(), self.compress)
            rows = sqlite_journal.rows(session, start[0], bodies, links, self.compress)
            self._db.executemany(sqlite_journal.INSERT, rows)
            marks = [(session, start[0] + i) for i, r in enumerate(records) if r["kind"] == MARK]
            if marks:
                self._db.executemany("INSERT INTO marks (session, pos) VALUES (?, ?)", marks)
            self._db.execute(
                "UPDATE sessions SET length = ? WHERE id = ?", (start[0] + len(records), session)
            )
        self._lengths[session] = start[0] + len(records)
        self._heads[session] = head
        if records:
            where = self._witness(session)
            witness.write(where, start[0] + len(records), head, self.durable, self.file_mode)
        self._appends += 1
        if self._appends % CHECKPOINT_EVERY == 0:
            if self._checkpointer is None:
                self._checkpointer = Checkpointer(str(self.db_path), self._lock)
            self._checkpointer.wake()

    def records(self, session: str) -> Iterator[Record]:
        return self.records_from(session, 0)

    def checkpoints(self, session: str) -> list[int]:
        with self._lock:
            found = self._db.execute(
                "SELECT pos FROM marks WHERE session = ? ORDER BY pos", (session,)
            ).fetchall()
        return [int(row[0]) for row in found]

    def records_from(self, session: str, start: int) -> Iterator[Record]:
        return settled_records(
            session,
            self.db_path,
            self._witness(session),
            lambda seen: self._read(session, seen, start),
        )

    def _read(
        self, session: str, seen: witness.Seen | None, start: int = 0
    ) -> tuple[list[Any], dict[str, bytes]]:
        with self._lock:
            # One read transaction: the journal and its blobs as of one moment.
            sqlite_tx.begin(self._db)
            try:
                if not self._db.execute(
                    "SELECT 1 FROM sessions WHERE id = ?", (session,)
                ).fetchone():
                    raise KeyError(f"no session {session!r} in {self.db_path}")
                if start > 0:
                    rows = sqlite_journal.read(self._db, session, start - 1)
                    links = sqlite_checks.verify_suffix(
                        session, str(self.db_path), rows, seen, start
                    )
                    rows = rows[1:]
                else:
                    rows = sqlite_journal.read(self._db, session)
                    links = self._verify(session, rows, seen)
                bodies = [json.loads(row[1]) for row in rows]
                wanted = [references(b, set()) for b in bodies]
                blobs = sqlite_blobs.fetch(self._db, set().union(*wanted))
                sqlite_checks.verify_blobs(session, str(self.db_path), wanted, blobs)
                self._lengths[session] = start + len(bodies)
                self._heads[session] = links[-1] if links else witness.ROOT
            finally:
                self._db.execute("COMMIT")
        return bodies, blobs

    # -- integrity (witness.py, sqlite/checks.py) -------------------------------------------------
    def _witness(self, session: str) -> Path:
        not_a_link(self._witnesses)
        return self._witnesses / session

    def _verify(
        self, session: str, rows: list[sqlite_journal.Entry], seen: witness.Seen | None
    ) -> list[str]:
        return sqlite_checks.verify_rows(session, str(self.db_path), rows, seen)

    def _head(self, session: str, length: int, seen: witness.Seen | None = None) -> str:
        """The last link of the session's first ``length`` rows (inside the caller's lock;
        ``seen``: the witness as read before the caller's read transaction began, else read
        now, inside a write transaction where no other append can land)."""
        if seen is None:
            seen = witness.read(self._witness(session))
        rows = sqlite_journal.read(self._db, session, 0, length)
        return self._verify(session, rows, seen)[-1] if length else witness.ROOT

    # -- one writer per session ------------------------------------------------------------------
    def claim(self, session: str) -> None:
        """Take the session's lease now (``SessionLocked`` if another live process holds it),
        before any append: a command that resumes a session says so before it starts."""
        with self._lock, self._transaction() as transaction:
            found = self._db.execute("SELECT length FROM sessions WHERE id = ?", (session,))
            start = found.fetchone()
            if start is None:
                raise KeyError(f"no session {session!r} in {self.db_path}")
            taken = self._hold(session, start[0], check_length=False)
            transaction.after = lambda: self._took(session, taken)

    def delete_session(self, session: str) -> None:
        """Remove the session and its journal (``SessionLocked`` if another live process writes
        it). The files its views named stay: they are stored by content and may be shared."""
        with self._lock, self._transaction():
            found = self._db.execute("SELECT length FROM sessions WHERE id = ?", (session,))
            if found.fetchone() is None:
                raise KeyError(f"no session {session!r} in {self.db_path}")
            self._hold(session, 0, check_length=False)
            for table in ("journal", "marks", "writers"):
                self._db.execute(f"DELETE FROM {table} WHERE session = ?", (session,))
            self._db.execute("DELETE FROM sessions WHERE id = ?", (session,))
        self._leases.pop(session, None)
        self._lengths.pop(session, None)

    def writer(self, session: str) -> Owner | None:
        """The live process holding the session's lease, if any."""
        with self._lock:
            row = self._db.execute(
                "SELECT pid, host, started, heartbeat FROM writers WHERE session = ?", (session,)
            ).fetchone()
        owner = None if row is None else Owner(*row)
        return owner if owner is not None and alive(owner) else None

    def _hold(self, session: str, length: int, check_length: bool = True) -> float | None:
        """Inside a write transaction: make sure this process holds the lease (and the journal
        is the one it knows). The lease time to remember once the transaction commits
        (``_took``): remembered before, a rolled-back transaction would leave this store
        believing it holds a lease the database does not record."""
        now = time.time()
        held = self._leases.get(session)
        if held is None:
            row = self._db.execute(
                "SELECT pid, host, started, heartbeat FROM writers WHERE session = ?", (session,)
            ).fetchone()
            if row is not None:
                owner = Owner(*row)
                if not same_process(owner) and alive(owner):
                    raise SessionLocked(locked_message(session, owner, str(self.db_path)))
        known = self._lengths.get(session)
        if check_length and known is not None and known != length:
            raise SessionLocked(changed_message(session, str(self.db_path), known, length))
        if held is None:
            me = this_process()
            self._db.execute(
                "INSERT OR REPLACE INTO writers (session, pid, host, started, heartbeat) "
                "VALUES (?, ?, ?, ?, ?)",
                (session, me.pid, me.host, me.started, now),
            )
            return now
        if now - held >= HEARTBEAT_SECONDS:
            self._db.execute("UPDATE writers SET heartbeat = ? WHERE session = ?", (now, session))
            return now
        return None

    def _took(self, session: str, when: float | None) -> None:
        if when is not None:
            self._leases[session] = when

    def _transaction(self) -> Transaction:
        self._refuse_writes()
        return Transaction(self._db)
