"""SqliteStore: the journal and a copy of every text in one SQLite file, files exported to root.

The database (``schema.py``) is the store's truth; the files under ``root`` are exports the
model opens with a plain file tool, at the same layout as ``FileStore`` (``disk.py``).

Invariants:

* ``append`` is one ``BEGIN IMMEDIATE`` transaction: a batch is wholly in or wholly out, also
  when the process is killed mid-way; WAL lets readers and other sessions' writers proceed.
  Different sessions may be appended from several processes at once (the write lock is held
  for one batch; ``busy_timeout`` waits for it); one writer per session.
* Every text is stored once: strings of 1 KiB or more in records go to ``blobs`` by hash
  (``blobrefs.py``), and so do the texts of exported files, so persisting a tool result that
  a message already holds costs only its file.
* A file is recorded in the database before it is exported, so every issued path can be
  re-exported: ``read_text`` of a file deleted behind our back serves it from the database and
  writes it again. ``issued`` is exactly the paths in ``files`` (kept relative to root, so a
  database and its root can move together).
* One writer per session (``lease.py``): the first append of a process to a session takes
  its row in ``writers`` in the same transaction, and is refused with ``SessionLocked`` while
  another live process holds it; an append to a journal that grew since this store read or
  wrote it is refused too. ``close`` releases the leases.
* One connection, shared by threads under a lock; ``close`` releases it.
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

from ..errors import CorruptStore as CorruptStore
from ..errors import ReadOnlyStore as ReadOnlyStore
from . import witness
from .base import Record
from .blobrefs import externalize, references, restore
from .disk import (
    DiskFiles,
    _same_bytes,
    append_bytes,
    append_rel,
    atomic_write,
    blob_rel,
    encode,
    folder_mode,
    make_dirs,
    sha256,
)
from .journal import (
    CorruptJournal,
    SessionExists,
    check_records,
    dumps,
    new_meta,
    valid_session_id,
)
from .lease import (
    HEARTBEAT_SECONDS,
    Owner,
    SessionLocked,
    alive,
    changed_message,
    locked_message,
    same_process,
    this_process,
)
from .schema import connect, connect_read_only

_TABLES = {"message": "messages", "edit": "edits", "event": "events"}
_INSERT = {
    "messages": "INSERT INTO messages (session, pos, id, parent, body, link) "
    "VALUES (?, ?, ?, ?, ?, ?)",
    "edits": "INSERT INTO edits (session, pos, body, link) VALUES (?, ?, ?, ?)",
    "events": "INSERT INTO events (session, pos, body, link) VALUES (?, ?, ?, ?)",
    "records": "INSERT INTO records (session, pos, kind, body, link) VALUES (?, ?, ?, ?, ?)",
}
_JOURNAL = " UNION ALL ".join(
    f"SELECT pos, body, link FROM {table} WHERE session = :s" for table in _INSERT
)
_INSERT_BLOB = "INSERT OR IGNORE INTO blobs (hash, size, body) VALUES (?, ?, ?)"
_MAX_VARIABLES = 500  # under SQLite's smallest default limit on ? per statement
CHECKPOINT_EVERY = 32  # appends between two background WAL checkpoints


WORKDIR_DB = Path(".context-compact") / "sessions.db"


def workdir_store(workdir: str | os.PathLike[str]) -> SqliteStore:
    """The agent CLI's store: every session in ``<workdir>/.context-compact/sessions.db`` and
    the files the model reads (saved results, archives, session indexes) under the work
    directory itself, where its tools can open them."""
    root = Path(workdir)
    return SqliteStore(root / WORKDIR_DB, root=root)


class SqliteStore(DiskFiles):
    def __init__(
        self,
        path: str | os.PathLike[str],
        root: str | os.PathLike[str] | None = None,
        durable: bool = False,
        private: bool = True,
        read_only: bool = False,
    ) -> None:
        self.db_path = Path(path)
        super().__init__(self.db_path.parent if root is None else root, durable, private)
        self._lock = threading.Lock()
        self._known_paths: set[str] = set()
        # Why writes are refused (None: they are not): asked for, or the file cannot be written.
        self.read_only: str | None = "opened with read_only=True" if read_only else None
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
                raise CorruptStore(unusable(self.db_path, error)) from None
        self._checkpointer: _Checkpointer | None = None
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
            raise CorruptStore(unusable(self.db_path, error)) from None
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

    # -- files --------------------------------------------------------------------------------
    def _remember(self, rel: str, kind: str, data: bytes | None) -> None:
        if rel in self._known_paths or (data is None and self._known(rel)):
            return
        if data is None:
            # The seed reuses a file that was there already: keep a copy of what it holds.
            data = (self.root_path / rel).read_bytes()
        digest = sha256(data)
        with self._lock, self._transaction():
            self._db.execute(_INSERT_BLOB, (digest, len(data), data))
            self._db.execute(
                "INSERT OR IGNORE INTO files (path, kind, hash, size) VALUES (?, ?, ?, ?)",
                (rel, kind, digest, len(data)),
            )
        self._known_paths.add(rel)

    def save_pack(self, pieces: list[str]) -> str:
        """The joined text as one exported file; in the database, the list of its pieces by
        hash (a result the log already holds as a blob costs nothing more)."""
        parts = [encode(piece) for piece in pieces]
        data = b"".join(parts)
        rel = blob_rel(sha256(data))
        if rel not in self._known_paths and not self._known(rel):
            digests = [sha256(part) for part in parts]
            with self._lock, self._transaction():
                self._db.executemany(
                    _INSERT_BLOB,
                    [(d, len(part), part) for d, part in zip(digests, parts, strict=True)],
                )
                self._db.execute(
                    "INSERT OR IGNORE INTO files (path, kind, hash, size) VALUES (?, ?, NULL, ?)",
                    (rel, "pack", len(data)),
                )
                self._db.executemany(
                    "INSERT OR IGNORE INTO file_chunks (path, seq, hash) VALUES (?, ?, ?)",
                    [(rel, i, d) for i, d in enumerate(digests)],
                )
            self._known_paths.add(rel)
        path = self.inside(rel)
        if not _same_bytes(path, data):
            atomic_write(path, data, self.durable, self.file_mode)
        return str(path)

    def _known(self, rel: str) -> bool:
        if rel in self._known_paths:
            return True
        with self._lock:
            row = self._db.execute("SELECT 1 FROM files WHERE path = ?", (rel,)).fetchone()
        if row is not None:
            self._known_paths.add(rel)
        return row is not None

    def _recover(self, rel: str) -> bytes | None:
        with self._lock:
            row = self._db.execute(
                "SELECT blobs.body FROM files JOIN blobs ON blobs.hash = files.hash "
                "WHERE files.path = ?",
                (rel,),
            ).fetchone()
            if row is not None:
                return bytes(row[0])
            chunks = self._db.execute(
                "SELECT blobs.body FROM file_chunks JOIN blobs ON blobs.hash = file_chunks.hash "
                "WHERE file_chunks.path = ? ORDER BY file_chunks.seq",
                (rel,),
            ).fetchall()
        return b"".join(bytes(chunk[0]) for chunk in chunks) if chunks else None

    def append_file(self, name: str, text: str) -> str:
        rel = append_rel(name)
        data = encode(text)
        digest = sha256(data)
        with self._lock, self._transaction():
            self._db.execute(_INSERT_BLOB, (digest, len(data), data))
            self._db.execute(
                "INSERT OR IGNORE INTO files (path, kind, hash, size) VALUES (?, ?, NULL, 0)",
                (rel, "append"),
            )
            before, seq = self._db.execute(
                "SELECT size, (SELECT coalesce(max(seq) + 1, 0) FROM file_chunks WHERE path = :p) "
                "FROM files WHERE path = :p",
                {"p": rel},
            ).fetchone()
            self._db.execute(
                "INSERT INTO file_chunks (path, seq, hash) VALUES (?, ?, ?)", (rel, seq, digest)
            )
            self._db.execute("UPDATE files SET size = size + ? WHERE path = ?", (len(data), rel))
        self._known_paths.add(rel)
        path = self.inside(rel)
        try:
            exported = path.lstat().st_size
        except FileNotFoundError:
            exported = -1
        if exported == before:
            append_bytes(path, data, self.durable, self.file_mode)
        else:
            # The export fell behind the database (a crash between the two, or deleted).
            atomic_write(path, self._recover(rel) or b"", self.durable, self.file_mode)
        return str(path)

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
        with self._lock, self._transaction():
            found = self._db.execute("SELECT length FROM sessions WHERE id = ?", (session,))
            start = found.fetchone()
            if start is None:
                raise KeyError(f"no session {session!r} in {self.db_path}")
            self._hold(session, start[0])
            head = self._heads.get(session)
            if head is None or self._lengths.get(session) != start[0]:
                head = self._head(session, start[0])
            links = []
            for body in bodies:
                head = witness.link(head, body.encode("ascii"))
                links.append(head)
            rows: dict[str, list[tuple[Any, ...]]] = {table: [] for table in _INSERT}
            for offset, (record, body, link) in enumerate(zip(records, bodies, links, strict=True)):
                table = _TABLES.get(record["kind"], "records")
                if table == "messages":
                    row: tuple[Any, ...] = (offset, _column(record.get("id")))
                    rows[table].append((*row, _column(record.get("parent")), body, link))
                elif table == "records":
                    rows[table].append((offset, record["kind"], body, link))
                else:
                    rows[table].append((offset, body, link))
            self._db.executemany(
                _INSERT_BLOB, [(digest, len(data), data) for digest, data in blobs.items()]
            )
            for table, table_rows in rows.items():
                if table_rows:
                    self._db.executemany(
                        _INSERT[table],
                        [(session, start[0] + row[0], *row[1:]) for row in table_rows],
                    )
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
                self._checkpointer = _Checkpointer(str(self.db_path))
            self._checkpointer.wake()
        elif self._appends % CHECKPOINT_EVERY == CHECKPOINT_EVERY // 2:
            # The background checkpoint copies most pages but races our next write, so the WAL
            # is never fully copied when a write starts and never restarts (measured: 78 MB of
            # WAL after 1,000 turns). Finishing the copy here is cheap, and lets the next write
            # restart it (and cut it to journal_size_limit).
            with self._lock:
                self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def records(self, session: str) -> Iterator[Record]:
        missing = KeyError(f"no session {session!r} in {self.db_path}")
        if not valid_session_id(session):
            raise missing
        with self._lock:
            # One read transaction: the journal and its blobs as of one moment.
            self._db.execute("BEGIN")
            try:
                if not self._db.execute(
                    "SELECT 1 FROM sessions WHERE id = ?", (session,)
                ).fetchone():
                    raise missing
                rows = self._db.execute(_JOURNAL + " ORDER BY pos", {"s": session}).fetchall()
                links = self._verify(session, rows)
                bodies = [json.loads(row[1]) for row in rows]
                wanted = [references(b, set()) for b in bodies]
                blobs = self._blobs(set().union(*wanted))
                self._verify_blobs(session, wanted, blobs)
                self._lengths[session] = len(bodies)
                self._heads[session] = links[-1] if links else witness.ROOT
            finally:
                self._db.execute("COMMIT")
        return iter([restore(body, blobs.__getitem__) for body in bodies])

    # -- integrity (witness.py) -------------------------------------------------------------------
    def _witness(self, session: str) -> Path:
        return self._witnesses / session

    def _verify(self, session: str, rows: list[Any]) -> list[str]:
        """The chain after each row, checked against the links stored and the witness."""
        links: list[str] = []
        head = witness.ROOT
        for pos, (at, body, stored) in enumerate(rows):
            head = witness.link(head, str(body).encode("utf-8", "surrogatepass"))
            if at != pos or (stored is not None and stored != head):
                what = f"record {pos} is missing" if at != pos else f"record {pos} was altered"
                raise CorruptJournal(
                    f"session {session!r} in {self.db_path}: {what} (hash chain differs); "
                    f"the {pos} records before it are whole",
                    session,
                    pos,
                    pos,
                    "record",
                )
            links.append(head)
        seen = witness.read(self._witness(session))
        witness.verify(session, str(self.db_path), links, seen, "record")
        return links

    def _verify_blobs(self, session: str, wanted: list[set[str]], blobs: dict[str, bytes]) -> None:
        for pos, hashes in enumerate(wanted):
            for digest in hashes:
                body = blobs.get(digest)
                if body is None or sha256(body) != digest:
                    state = "missing" if body is None else "altered"
                    raise CorruptJournal(
                        f"session {session!r} in {self.db_path}: a text of record {pos} is "
                        f"{state} (blob {digest[:12]}); the {pos} records before it are whole",
                        session,
                        pos,
                        pos,
                        "record",
                    )

    def _head(self, session: str, length: int) -> str:
        """The last link of the session's first ``length`` rows (inside the caller's lock)."""
        rows = self._db.execute(_JOURNAL + " ORDER BY pos", {"s": session}).fetchall()
        return self._verify(session, rows[:length])[-1] if length else witness.ROOT

    # -- one writer per session ------------------------------------------------------------------
    def claim(self, session: str) -> None:
        """Take the session's lease now (``SessionLocked`` if another live process holds it),
        before any append: a command that resumes a session says so before it starts."""
        with self._lock, self._transaction():
            found = self._db.execute("SELECT length FROM sessions WHERE id = ?", (session,))
            start = found.fetchone()
            if start is None:
                raise KeyError(f"no session {session!r} in {self.db_path}")
            self._hold(session, start[0], check_length=False)

    def writer(self, session: str) -> Owner | None:
        """The live process holding the session's lease, if any."""
        with self._lock:
            row = self._db.execute(
                "SELECT pid, host, started, heartbeat FROM writers WHERE session = ?", (session,)
            ).fetchone()
        owner = None if row is None else Owner(*row)
        return owner if owner is not None and alive(owner) else None

    def _hold(self, session: str, length: int, check_length: bool = True) -> None:
        """Inside a write transaction: make sure this process holds the lease (and the journal
        is the one it knows)."""
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
            self._leases[session] = now
        elif now - held >= HEARTBEAT_SECONDS:
            self._db.execute("UPDATE writers SET heartbeat = ? WHERE session = ?", (now, session))
            self._leases[session] = now

    def _blobs(self, hashes: set[str]) -> dict[str, bytes]:
        wanted = sorted(hashes)
        found: dict[str, bytes] = {}
        for at in range(0, len(wanted), _MAX_VARIABLES):
            part = wanted[at : at + _MAX_VARIABLES]
            marks = ",".join("?" * len(part))
            query = f"SELECT hash, body FROM blobs WHERE hash IN ({marks})"
            found.update((h, bytes(body)) for h, body in self._db.execute(query, part))
        return found

    def _transaction(self) -> _Transaction:
        self._refuse_writes()
        return _Transaction(self._db)


def unusable(path: Path, error: BaseException) -> str:
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = db.execute("PRAGMA integrity_check").fetchall()
            answer = "; ".join(str(row[0]) for row in rows[:3])
        finally:
            db.close()
    except sqlite3.Error as check:
        answer = str(check)
    return f"{path}: not a usable SQLite database ({error}; integrity_check: {answer})"


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, or ``ROLLBACK`` on any exception."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        try:
            if kind is None:
                self._db.execute("COMMIT")
        finally:
            # Also after a failed COMMIT: the connection must not stay inside a transaction.
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")


def _column(value: Any) -> str | None:
    """A message's id or parent as a column: the text when SQLite can hold it, else its JSON."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            pass
    return dumps(value)


class _Checkpointer:
    """A daemon thread that checkpoints the WAL (PASSIVE: never blocks a writer) when woken."""

    def __init__(self, path: str) -> None:
        self._path = path
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
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            db.close()
