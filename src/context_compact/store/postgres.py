"""PostgresStore: the journal and a copy of every text in PostgreSQL, for a fleet of workers.

The same store as ``SqliteStore`` (``sqlite.py``), on a server every worker reaches: the
database (``pg_schema.py``) is the truth; the files under ``root`` are a local cache the
model opens with a plain file tool, at ``FileStore``'s layout (``disk.py``). Needs the extra
``context-compact[postgres]`` (psycopg 3 and its pool).

Invariants:

* ``append`` is one transaction that first locks the session's row (``FOR UPDATE``): a
  batch is wholly in or wholly out, also when the worker is killed mid-way, and two appends
  to one session are serialized. Readers never wait: ``records`` reads one MVCC snapshot
  (``REPEATABLE READ``) and takes no lock.
* Every text is stored once, by the sha256 of its UTF-8 (``blobrefs.py``), like SQLite.
* Files the view names are in the database before they are exported, so any worker serves
  them: ``read_text`` of a path whose file is not on this machine reads the database and
  writes the local copy. A path issued under another worker's root is recognized too (every
  root is recorded in ``roots``): ``issued``/``read_text`` take the part after the root.
* One writer per session across machines (``lease.py`` for the holder and its messages): the
  first append (or ``claim``) takes the session's row in ``writers`` with a *fencing token*
  one above the last one given. Every append checks, under the row lock, that the token is
  still its own: a worker that lost its lease (another took the session over after its
  heartbeat went stale) cannot append, even if it never noticed. A holder on the same host
  is alive while its pid is (SIGKILL frees the session at once); on another host while its
  heartbeat, the server's clock at its last append, is younger than ``lease_seconds``. An
  append to a journal that grew since this store read or wrote it is refused as well.
* The connection pool is shared by threads; ``close`` releases the leases and the pool.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import ContextCompactError
from .base import Record
from .blobrefs import externalize, references, restore
from .disk import (
    _ISSUABLE,
    DiskFiles,
    _same_bytes,
    append_bytes,
    append_rel,
    atomic_write,
    blob_rel,
    encode,
    sha256,
)
from .journal import SessionExists, check_records, dumps, new_meta, valid_session_id
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
from .pg_schema import check_schema, migrate
from .text import scan

LEASE_SECONDS = 60.0
"""How long a writer on another host keeps a session without appending (its heartbeat)."""

_TABLES = {"message": "messages", "edit": "edits", "event": "events"}
_INSERT = {
    "messages": "INSERT INTO messages (session, pos, id, parent, body) VALUES (%s, %s, %s, %s, %s)",
    "edits": "INSERT INTO edits (session, pos, body) VALUES (%s, %s, %s)",
    "events": "INSERT INTO events (session, pos, body) VALUES (%s, %s, %s)",
    "records": "INSERT INTO records (session, pos, kind, body) VALUES (%s, %s, %s, %s)",
}
_JOURNAL = " UNION ALL ".join(
    f"SELECT pos, body FROM {table} WHERE session = %(s)s" for table in _INSERT
)
_INSERT_BLOB = "INSERT INTO blobs (hash, size, body) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"
_INSERT_FILE = (
    "INSERT INTO files (path, kind, hash, size) VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING"
)
_WRITER = (
    "SELECT token, pid, host, started, heartbeat, "
    "extract(epoch FROM clock_timestamp())::float8 FROM writers WHERE session = %s"
)
_NOW = "extract(epoch FROM clock_timestamp())"
_LOCK = (
    "SELECT s.length, w.token, w.pid, w.host, w.started, w.heartbeat, "
    f"{_NOW}::float8 FROM sessions s LEFT JOIN writers w ON w.session = s.id "
    "WHERE s.id = %s FOR UPDATE OF s"
)
_BEAT = f"UPDATE writers SET heartbeat = {_NOW} WHERE session = %s"


class ServerUnavailable(ContextCompactError, OSError):
    """The PostgreSQL server did not answer, or refused the write (connection lost, disk
    full, shutting down)."""


def _psycopg() -> tuple[Any, Any]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError:
        raise ImportError(
            "PostgresStore needs psycopg 3 and its pool: pip install 'context-compact[postgres]'"
        ) from None
    return psycopg, psycopg_pool


def shown_url(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc).geturl()


class PostgresStore(DiskFiles):
    def __init__(
        self,
        url: str,
        root: str | os.PathLike[str] | None = None,
        *,
        schema: str = "context_compact",
        lease_seconds: float = LEASE_SECONDS,
        pool_size: int = 4,
        durable: bool = False,
    ) -> None:
        psycopg, psycopg_pool = _psycopg()
        self._psycopg, self._psycopg_pool = psycopg, psycopg_pool
        super().__init__(Path.cwd() if root is None else root, durable)
        self.url = url
        self.schema = check_schema(schema)
        self.lease_seconds = lease_seconds
        self.where = f"{shown_url(url)} (schema {schema})"
        with psycopg.connect(url, autocommit=True) as conn:
            migrate(conn, schema, self.where)
            conn.execute(
                f"INSERT INTO {schema}.roots (root) VALUES (%s) ON CONFLICT DO NOTHING",
                (self._abs_root,),
            )
        options = f"-c search_path={schema}"
        if not durable:
            # Like SqliteStore's default: a commit survives any crash of this process (the
            # server has it); one of the server itself may lose its last fraction of a second.
            options += " -c synchronous_commit=off"
        self._pool = psycopg_pool.ConnectionPool(
            url,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs={"autocommit": True, "options": options},
            name=f"context-compact:{schema}",
            open=True,
        )
        self._lock = threading.Lock()  # guards the dicts below, never held during a query
        self._known_paths: set[str] = set()
        self._appended: set[str] = set()  # of those, the files append_file grows
        self._roots: set[str] = {self._abs_root}
        self._lengths: dict[str, int] = {}  # journal length last read or written, per session
        self._tokens: dict[str, int] = {}  # sessions this store writes -> its fencing token
        self._beats: dict[str, float] = {}  # ... -> the server time of its last heartbeat

    @contextlib.contextmanager
    def _connection(self) -> Iterator[Any]:
        """A pooled connection; the server unreachable or failing is ``ServerUnavailable``, an
        ``OSError`` like a full disk, so the engine fails soft on it (``STORE_ERRORS``)."""
        try:
            with self._pool.connection() as conn:
                yield conn
        except (self._psycopg.OperationalError, self._psycopg_pool.PoolTimeout) as error:
            raise ServerUnavailable(f"{self.where}: {str(error).strip()}") from error

    def __repr__(self) -> str:
        return f"PostgresStore({shown_url(self.url)!r}, root={self.root!r})"

    def close(self) -> None:
        with self._lock:
            held = dict(self._tokens)
            self._tokens.clear()
        try:
            if held:
                with self._connection() as conn:
                    conn.cursor().executemany(
                        "UPDATE writers SET heartbeat = 0 WHERE session = %s AND token = %s",
                        list(held.items()),
                    )
        finally:
            self._pool.close()

    # -- files --------------------------------------------------------------------------------
    def relative(self, path: str) -> str | None:
        """Also a path under the root of another worker of this database."""
        rel = super().relative(path)
        if rel is not None or not isinstance(path, str) or not os.path.isabs(path):
            return rel
        full = os.path.normpath(path)
        for marker in ("/.task_outputs/", "/.transcripts/"):
            at = full.find(marker)
            if at < 0:
                continue
            root, tail = full[:at], full[at + 1 :]
            if _ISSUABLE.fullmatch(tail) and self._a_root(root):
                return tail
        return None

    def _a_root(self, root: str) -> bool:
        if root in self._roots:
            return True
        with self._connection() as conn:
            found = conn.execute("SELECT 1 FROM roots WHERE root = %s", (root,)).fetchone()
        if found:
            with self._lock:
                self._roots.add(root)
        return found is not None

    def _remember(self, rel: str, kind: str, data: bytes | None) -> None:
        if rel in self._known_paths or (data is None and self._known(rel)):
            return
        if data is None:
            # The seed reuses a file that was there already: keep a copy of what it holds.
            data = (self.root_path / rel).read_bytes()
        digest = sha256(data)
        with self._connection() as conn, conn.transaction():
            conn.execute(_INSERT_BLOB, (digest, len(data), data))
            conn.execute(_INSERT_FILE, (rel, kind, digest, len(data)))
        with self._lock:
            self._known_paths.add(rel)

    def save_pack(self, pieces: list[str]) -> str:
        """The joined text as one exported file; in the database, its pieces by hash."""
        parts = [encode(piece) for piece in pieces]
        data = b"".join(parts)
        rel = blob_rel(sha256(data))
        if not self._known(rel):
            digests = [sha256(part) for part in parts]
            blobs = sorted({d: part for d, part in zip(digests, parts, strict=True)}.items())
            with self._connection() as conn, conn.transaction():
                cursor = conn.cursor()
                cursor.executemany(_INSERT_BLOB, [(d, len(part), part) for d, part in blobs])
                found = cursor.execute(
                    _INSERT_FILE + " RETURNING path", (rel, "pack", None, len(data))
                ).fetchone()
                if found is not None:  # not written by another worker meanwhile
                    cursor.executemany(
                        "INSERT INTO file_chunks (path, seq, hash) VALUES (%s, %s, %s)",
                        [(rel, i, d) for i, d in enumerate(digests)],
                    )
            with self._lock:
                self._known_paths.add(rel)
        path = self.root_path / rel
        if not _same_bytes(path, data):
            atomic_write(path, data, self.durable)
        return str(path)

    def _known(self, rel: str) -> bool:
        if rel in self._known_paths:
            return True
        with self._connection() as conn:
            row = conn.execute("SELECT kind FROM files WHERE path = %s", (rel,)).fetchone()
        if row is not None:
            with self._lock:
                self._known_paths.add(rel)
                if row[0] == "append":
                    self._appended.add(rel)
        return row is not None

    def read_bytes(self, path: str) -> bytes:
        """An appended file (a session's index) may have grown on another worker: it is read
        from the database, and the local copy brought up to date; every other file is
        written once, so its local copy is it."""
        rel = self.relative(path)
        if rel is None or not self._known(rel) or rel not in self._appended:
            return super().read_bytes(path)
        data = self._recover(rel) or b""
        local = self.root_path / rel
        if not _same_bytes(local, data):
            atomic_write(local, data, self.durable)
        return data

    def _recover(self, rel: str) -> bytes | None:
        with self._connection() as conn, conn.transaction():
            row = conn.execute(
                "SELECT blobs.body FROM files JOIN blobs ON blobs.hash = files.hash "
                "WHERE files.path = %s",
                (rel,),
            ).fetchone()
            if row is not None:
                return bytes(row[0])
            chunks = conn.execute(
                "SELECT blobs.body FROM file_chunks JOIN blobs ON blobs.hash = file_chunks.hash "
                "WHERE file_chunks.path = %s ORDER BY file_chunks.seq",
                (rel,),
            ).fetchall()
        return b"".join(bytes(chunk[0]) for chunk in chunks) if chunks else None

    def append_file(self, name: str, text: str) -> str:
        rel = append_rel(name)
        data = encode(text)
        digest = sha256(data)
        with self._connection() as conn, conn.transaction():
            conn.execute(_INSERT_BLOB, (digest, len(data), data))
            conn.execute(_INSERT_FILE, (rel, "append", None, 0))
            before = conn.execute(
                "SELECT size FROM files WHERE path = %s FOR UPDATE", (rel,)
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO file_chunks (path, seq, hash) SELECT %(p)s, "
                "coalesce(max(seq) + 1, 0), %(h)s FROM file_chunks WHERE path = %(p)s",
                {"p": rel, "h": digest},
            )
            conn.execute("UPDATE files SET size = size + %s WHERE path = %s", (len(data), rel))
        with self._lock:
            self._known_paths.add(rel)
            self._appended.add(rel)
        path = self.root_path / rel
        try:
            exported = path.stat().st_size
        except FileNotFoundError:
            exported = -1
        if exported == before:
            append_bytes(path, data, self.durable)
        else:
            # The local copy fell behind the database (another worker appended, or a crash).
            atomic_write(path, self._recover(rel) or b"", self.durable)
        return str(path)

    # -- the session journal ---------------------------------------------------------------------
    def create_session(self, meta: dict[str, Any]) -> str:
        full = new_meta(meta)
        session: str = full["id"]
        with self._connection() as conn:
            created = conn.execute(
                "INSERT INTO sessions (id, created, meta) VALUES (%s, %s, %s) "
                "ON CONFLICT DO NOTHING RETURNING id",
                (session, full["created"], dumps(full)),
            ).fetchone()
        if created is None:
            raise SessionExists(f"session {session!r} already exists in {self.where}")
        with self._lock:
            self._lengths[session] = 0
        return session

    def session_meta(self, session: str) -> dict[str, Any] | None:
        if not valid_session_id(session):
            return None
        with self._connection() as conn:
            row = conn.execute("SELECT meta FROM sessions WHERE id = %s", (session,)).fetchone()
        return None if row is None else _loads(row[0])

    def list_sessions(self) -> list[dict[str, Any]]:
        with self._connection() as conn:
            rows = conn.execute("SELECT meta FROM sessions ORDER BY created DESC, seq DESC")
            return [_loads(row[0]) for row in rows]

    def append(self, session: str, records: list[Record]) -> None:
        check_records(records)
        if not valid_session_id(session):
            raise KeyError(f"no session {session!r} in {self.where}")
        # The JSON and hashing work happens before the transaction starts.
        blobs: dict[str, bytes] = {}
        rows: dict[str, list[tuple[Any, ...]]] = {table: [] for table in _INSERT}
        for offset, record in enumerate(records):
            body = dumps(externalize(record, blobs))
            table = _TABLES.get(record["kind"], "records")
            if table == "messages":
                ids = (_column(record.get("id")), _column(record.get("parent")))
                rows[table].append((offset, *ids, body))
            elif table == "records":
                rows[table].append((offset, record["kind"], body))
            else:
                rows[table].append((offset, body))
        with self._connection() as conn, conn.transaction():
            start, writer = self._lock_session(conn, session)
            self._hold(conn, session, start, writer)
            # One round trip for every row of the batch.
            with conn.pipeline():
                self._insert(conn.cursor(), session, start, blobs, rows, len(records))
        with self._lock:
            self._lengths[session] = start + len(records)

    @staticmethod
    def _insert(
        cursor: Any,
        session: str,
        start: int,
        blobs: dict[str, bytes],
        rows: dict[str, list[tuple[Any, ...]]],
        count: int,
    ) -> None:
        if blobs:
            # In hash order: two transactions inserting the same blobs never deadlock.
            cursor.executemany(
                _INSERT_BLOB, [(d, len(data), data) for d, data in sorted(blobs.items())]
            )
        for table, table_rows in rows.items():
            if table_rows:
                cursor.executemany(
                    _INSERT[table],
                    [(session, start + row[0], *row[1:]) for row in table_rows],
                )
        cursor.execute("UPDATE sessions SET length = %s WHERE id = %s", (start + count, session))

    def search(self, session: str, query: str) -> Iterator[Record]:
        """The generic search: every record read and tested (``text.scan``)."""
        return scan(self.records(session), query)

    def records(self, session: str) -> Iterator[Record]:
        missing = KeyError(f"no session {session!r} in {self.where}")
        if not valid_session_id(session):
            raise missing
        with self._connection() as conn, conn.transaction():
            # One snapshot: the journal and its blobs as of one moment; no lock taken.
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            if not conn.execute("SELECT 1 FROM sessions WHERE id = %s", (session,)).fetchone():
                raise missing
            bodies = [
                _loads(row[1]) for row in conn.execute(_JOURNAL + " ORDER BY pos", {"s": session})
            ]
            wanted = sorted(set().union(*(references(body, set()) for body in bodies)))
            blobs = {
                row[0]: bytes(row[1])
                for row in conn.execute(
                    "SELECT hash, body FROM blobs WHERE hash = ANY(%s)", (wanted,)
                )
            }
        with self._lock:
            self._lengths[session] = len(bodies)
        return iter([restore(body, blobs.__getitem__) for body in bodies])

    # -- one writer per session ------------------------------------------------------------------
    def claim(self, session: str) -> None:
        """Take the session's lease now (``SessionLocked`` if another live writer holds it)."""
        with self._connection() as conn, conn.transaction():
            start, writer = self._lock_session(conn, session)
            self._hold(conn, session, start, writer, check_length=False)

    def writer(self, session: str) -> Owner | None:
        """The live writer holding the session's lease, if any."""
        with self._connection() as conn:
            row = conn.execute(_WRITER, (session,)).fetchone()
        if row is None:
            return None
        owner = Owner(row[1], row[2], row[3], row[4])
        return owner if self._alive(owner, row[5]) else None

    def token(self, session: str) -> int | None:
        """The fencing token this store writes ``session`` with (None: not its writer)."""
        return self._tokens.get(session)

    def _lock_session(self, conn: Any, session: str) -> tuple[int, tuple[Any, ...] | None]:
        """Lock the session's row: its journal length, and its writer's row (as ``_WRITER``)."""
        row = conn.execute(_LOCK, (session,)).fetchone()
        if row is None:
            raise KeyError(f"no session {session!r} in {self.where}")
        return int(row[0]), None if row[1] is None else tuple(row[1:])

    def _alive(self, owner: Owner, now: float) -> bool:
        if owner.heartbeat <= 0:
            return False  # released by close
        if owner.host == this_process().host:
            return alive(owner)
        return now - owner.heartbeat < self.lease_seconds

    def _hold(
        self,
        conn: Any,
        session: str,
        length: int,
        row: tuple[Any, ...] | None,
        check_length: bool = True,
    ) -> None:
        """Inside the transaction holding the session's row: make sure this store still holds
        the lease (its token is the newest) and the journal is the one it knows."""
        mine = self._tokens.get(session)
        token = 0 if row is None else int(row[0])
        owner = None if row is None else Owner(row[1], row[2], row[3], row[4])
        now = 0.0 if row is None else float(row[5])
        if mine is not None and token != mine:
            raise SessionLocked(_lost_message(session, self.where, owner, mine, row))
        if (
            mine is None
            and owner is not None
            and not same_process(owner)
            and self._alive(owner, now)
        ):
            raise SessionLocked(locked_message(session, owner, self.where))
        known = self._lengths.get(session)
        if check_length and known is not None and known != length:
            raise SessionLocked(changed_message(session, self.where, known, length))
        if mine is not None:
            stale = now - self._beats.get(session, 0.0) >= HEARTBEAT_SECONDS
            if stale or (owner is not None and owner.heartbeat <= 0):
                # (0: released by another store object of this process meanwhile)
                conn.execute(_BEAT, (session,))
                with self._lock:
                    self._beats[session] = now
            return
        if owner is None or not same_process(owner) or owner.heartbeat <= 0:
            token += 1  # a new writer: a new fencing token
        # else another store object of this process holds it: the lease is the process's
        me = this_process()
        conn.execute(
            "INSERT INTO writers (session, token, pid, host, started, heartbeat) "
            f"VALUES (%s, %s, %s, %s, %s, {_NOW}) ON CONFLICT (session) DO UPDATE SET "
            "token = excluded.token, pid = excluded.pid, host = excluded.host, "
            "started = excluded.started, heartbeat = excluded.heartbeat",
            (session, token, me.pid, me.host, me.started),
        )
        with self._lock:
            self._tokens[session] = token
            self._beats[session] = now


def _lost_message(
    session: str, where: str, owner: Owner | None, mine: int, row: tuple[Any, ...] | None
) -> str:
    holder = (
        "nobody holds it now"
        if owner is None or owner.heartbeat <= 0
        else f"process {owner.pid} on {owner.host} holds it now"
    )
    token = "" if row is None else f", token {row[0]}"
    return (
        f"session {session!r} in {where}: this store lost its lease (token {mine}): it was "
        f"taken over after this writer's heartbeat went stale; {holder}{token}. Nothing was "
        "appended; resume the session again to continue from what is there"
    )


def _loads(text: str) -> Any:
    return json.loads(text)


def _column(value: Any) -> str | None:
    """A message's id or parent as a column: the text when PostgreSQL can hold it (valid
    UTF-8, no NUL), else its JSON."""
    if value is None:
        return None
    if isinstance(value, str) and "\x00" not in value:
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            pass
    return dumps(value)
