"""PostgresStore: the journal and a copy of every text in PostgreSQL, for a fleet of workers.

The same store as ``SqliteStore`` (``sqlite/store.py``), on a server every worker reaches: the
database (``postgres/schema.py``) is the truth; the files under ``root`` are a local cache the
model opens with a plain file tool, at ``FileStore``'s layout (``store/disk.py``). Needs the
extra ``context-compact[postgres]`` (psycopg 3 and its pool). Its parts: the connection and
errors (``postgres/base.py``), the files any worker reads (``postgres/files.py``), one writer
per session with fencing tokens (``postgres/lease.py``), and here the journal.

Invariants:

* ``append`` is one transaction that first locks the session's row (``FOR UPDATE``): a
  batch is wholly in or wholly out, also when the worker is killed mid-way, and two appends
  to one session are serialized. Readers never wait: ``records`` reads one MVCC snapshot
  (``REPEATABLE READ``) and takes no lock.
* Every text is stored once, by the sha256 of its UTF-8 (``blobrefs.py``), like SQLite.
* Integrity, as SQLite's (``witness.py``): each journal row carries ``link``, the hash chain
  over the bodies before it, and the session's row its ``length`` and ``head`` (the last
  link), all written in the append's transaction. Reading checks the chain row by row, that
  the rows reach ``length`` and end at ``head``, that every text hashes to its name, and the
  witness this worker wrote: a row altered, deleted or cut off the tail is ``CorruptJournal``
  naming the session and what before it is whole, never a resume from an earlier point.
  The witness (``<root>/.context-compact/heads/<schema's instance id>/<session>``, the count
  and link after this worker's last append) is outside the database, so it also finds a
  database rolled back behind the worker's back (a server that lost its last commits, a
  restored backup), for the sessions this worker wrote. A witness behind the journal
  (another worker appended since) is a lower bound, as in SQLite.
* An append first makes sure the journal it continues is whole: unless this store read or
  wrote the session at its present length and head, the chain is checked before anything is
  written.
* The writer holding the lease appends in one round trip: BEGIN, the session's row locked,
  a statement that fails unless the journal's length and head and the lease's token are
  those this store knows, the batch's rows and COMMIT, sent together. Any mismatch rolls the
  whole batch back and the append is made again the checked way (two round trips: the row
  read and checked, then the rows), which writes or says why not.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import witness
from ..base import CHECKPOINT_KIND, Record
from ..blobrefs import externalize, references
from ..boundary import maps_errors
from ..codec import dumps
from ..journal import CorruptJournal, SessionExists, check_records, new_meta, valid_session_id
from ..journal_rows import (
    TABLES,
    chain,
    check_blobs,
    check_chain,
    check_suffix,
    column,
    route,
    settled_records,
)
from .base import LEASE_SECONDS, ServerUnavailable, refusal, shown_url
from .files import _INSERT_BLOB, PgFiles
from .lease import PgLease

_INSERT = {
    "messages": "INSERT INTO messages (session, pos, id, parent, body, link) "
    "VALUES (%s, %s, %s, %s, %s, %s)",
    "edits": "INSERT INTO edits (session, pos, body, link) VALUES (%s, %s, %s, %s)",
    "events": "INSERT INTO events (session, pos, body, link) VALUES (%s, %s, %s, %s)",
    "records": "INSERT INTO records (session, pos, kind, body, link) VALUES (%s, %s, %s, %s, %s)",
}
_JOURNAL = " UNION ALL ".join(
    f"SELECT pos, body, link FROM {table} WHERE session = %(s)s" for table in TABLES
)
_JOURNAL_FROM = " UNION ALL ".join(
    f"SELECT pos, body, link FROM {table} WHERE session = %(s)s AND pos >= %(a)s"
    for table in TABLES
)


@maps_errors(refusal)
class PostgresStore(PgLease, PgFiles):
    def close(self) -> None:
        try:
            self.release_all()
        finally:
            self._pool.close()

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
            self._heads[session] = (0, witness.ROOT)
        return session

    def session_meta(self, session: str) -> dict[str, Any] | None:
        if not valid_session_id(session):
            return None
        with self._connection() as conn:
            row = conn.execute("SELECT meta FROM sessions WHERE id = %s", (session,)).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def list_sessions(self) -> list[dict[str, Any]]:
        with self._connection() as conn:
            rows = conn.execute("SELECT meta FROM sessions ORDER BY created DESC, seq DESC")
            return [json.loads(row[0]) for row in rows]

    def append(self, session: str, records: list[Record]) -> None:
        check_records(records)
        if not valid_session_id(session):
            raise KeyError(f"no session {session!r} in {self.where}")
        # The JSON and hashing work happens before the transaction starts.
        blobs: dict[str, bytes] = {}
        bodies = [dumps(externalize(record, blobs)) for record in records]
        done = self._append_steady(session, records, bodies, blobs)
        length, last = done or self._append_checked(session, records, bodies, blobs)
        with self._lock:
            self._lengths[session] = length
            self._heads[session] = (length, last or witness.ROOT)
        if records:
            witness.write(self._witness(session), length, last or "", self.durable, self.file_mode)

    def _append_steady(
        self, session: str, records: list[Record], bodies: list[str], blobs: dict[str, bytes]
    ) -> tuple[int, str | None] | None:
        """The append of a writer that holds the lease and knows the journal (``steady``),
        in one round trip: the server checks, once the row is locked, what the writer takes
        as known (``still_mine``); if it is not so, nothing of the batch is written and None
        is returned (as when not steady): ``_append_checked`` reads and says why."""
        steady = self.steady(session)
        if steady is None:
            return None
        start, known, token = steady
        head = None if known == witness.ROOT else known  # the session's row: NULL before any
        links = chain(known, bodies)
        last = links[-1] if links else head
        with self._connection() as conn:
            try:
                with self._one_trip(conn):
                    self.still_mine(conn, session, start, head, token)
                    self._write(conn, session, start, records, bodies, links, last, blobs)
            except self._psycopg.errors.DivisionByZero:
                return None
        return start + len(records), last

    def _append_checked(
        self, session: str, records: list[Record], bodies: list[str], blobs: dict[str, bytes]
    ) -> tuple[int, str | None]:
        """The append in two round trips: BEGIN with the session's locked row (the lease and
        the journal's length and head are checked on it, the journal read whole if this
        store has not checked it at that length), then the batch's rows with the COMMIT."""
        with self._batch() as conn:
            start, head, writer = self.lock_session(conn, session)
            committed = self._hold(conn, session, start, writer)
            if self._heads.get(session) != (start, head or witness.ROOT):
                head = self._whole(conn, session, start, head)
            links = chain(head or witness.ROOT, bodies)
            last = links[-1] if links else head
            self._write(conn, session, start, records, bodies, links, last, blobs)
        committed()
        return start + len(records), last

    def _write(
        self,
        conn: Any,
        session: str,
        start: int,
        records: list[Record],
        bodies: list[str],
        links: list[str],
        last: str | None,
        blobs: dict[str, bytes],
    ) -> None:
        """Queue the batch's rows (its blobs, its records, the session's new length and
        head) on ``conn``'s pipeline."""
        cursor = conn.cursor()
        if blobs:
            # In hash order: two transactions inserting the same blobs never deadlock.
            cursor.executemany(
                _INSERT_BLOB, [(d, len(data), data) for d, data in sorted(blobs.items())]
            )
        for table, table_rows in route(records, bodies, links, _column).items():
            if table_rows:
                cursor.executemany(
                    _INSERT[table], [(session, start + r[0], *r[1:]) for r in table_rows]
                )
        cursor.execute(
            "UPDATE sessions SET length = %s, head = %s WHERE id = %s",
            (start + len(records), last, session),
        )

    def records(self, session: str) -> Iterator[Record]:
        return self.records_from(session, 0)

    def checkpoints(self, session: str) -> list[int]:
        with self._connection() as conn:
            # The kind written out, not a parameter: a prepared statement's generic plan could
            # not use the partial index on it, and would read every record of the session.
            found = conn.execute(
                f"SELECT pos FROM records WHERE session = %s AND kind = '{CHECKPOINT_KIND}' "
                "ORDER BY pos",
                (session,),
            ).fetchall()
        return [int(row[0]) for row in found]

    def records_from(self, session: str, start: int) -> Iterator[Record]:
        return settled_records(
            session,
            self.where,
            self._witness(session),
            lambda seen: self._read(session, seen, start),
        )

    def _read(
        self, session: str, seen: witness.Seen | None, start: int = 0
    ) -> tuple[list[Any], dict[str, bytes]]:
        with self._connection() as conn, self._one_trip(conn):
            # One snapshot: the journal and its blobs as of one moment; no lock taken. The
            # session's row and its journal are asked for at once (one round trip), the
            # blobs once the journal names them (a second), the COMMIT a third.
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            row = conn.execute("SELECT length, head FROM sessions WHERE id = %s", (session,))
            if start > 0:
                query = {"s": session, "a": start - 1}
                journal = conn.execute(_JOURNAL_FROM + " ORDER BY pos", query)
            else:
                journal = conn.execute(_JOURNAL + " ORDER BY pos", {"s": session})
            found = row.fetchone()
            if found is None:
                raise KeyError(f"no session {session!r} in {self.where}")
            rows = journal.fetchall()
            if start > 0:
                links = self._verify_suffix(session, rows, int(found[0]), found[1], seen, start)
                rows = rows[1:]
            else:
                links = self._verify(session, rows, int(found[0]), found[1], seen)
            bodies = [json.loads(row[1]) for row in rows]
            wanted = [references(body, set()) for body in bodies]
            hashes = sorted(set().union(*wanted))
            blobs = {
                row[0]: bytes(row[1])
                for row in conn.execute(
                    "SELECT hash, body FROM blobs WHERE hash = ANY(%s)", (hashes,)
                )
            }
        check_blobs(session, self.where, wanted, blobs)
        with self._lock:
            self._lengths[session] = start + len(bodies)
            self._heads[session] = (start + len(bodies), links[-1] if links else witness.ROOT)
        return bodies, blobs

    # -- integrity ------------------------------------------------------------------------------
    def _witness(self, session: str) -> Path:
        # inside: a folder on the way that is a planted link is refused, never followed.
        return self.inside(f".context-compact/heads/{self.instance}/{session}")

    def _whole(self, conn: Any, session: str, length: int, head: str | None) -> str:
        """The head of a journal this store has not checked at this length: checked now,
        inside the append's transaction (``CorruptJournal`` and nothing written if not
        whole)."""
        rows = conn.execute(_JOURNAL + " ORDER BY pos", {"s": session}).fetchall()
        # The session's row is locked: no append lands between these reads.
        links = self._verify(session, rows, length, head, witness.read(self._witness(session)))
        return links[-1] if links else witness.ROOT

    def _verify(
        self,
        session: str,
        rows: list[Any],
        length: int,
        head: str | None,
        seen: witness.Seen | None,
    ) -> list[str]:
        """The chain after each row, checked row by row, against the session's row (its
        length and head) and against this worker's witness ``seen`` (read before the rows'
        snapshot was taken)."""
        links = check_chain(session, self.where, rows)
        if len(links) > length:
            raise CorruptJournal(
                f"session {session!r} in {self.where}: the journal holds {len(links)} records "
                f"but {length} were written: records from {length} on are not the store's; "
                f"the {length} records before them are whole",
                session,
                length,
                length,
                "record",
            )
        # The session's row holds the whole count; its head is NULL in a journal written
        # before links (then only the count is checked).
        said = witness.Seen(length, head if head is not None else "")
        if head is None and len(links) == length:
            said = witness.Seen(0, "")
        witness.verify(session, self.where, links, said, "record")
        witness.verify(session, self.where, links, seen, "record")
        return links

    def _verify_suffix(
        self,
        session: str,
        rows: list[Any],
        length: int,
        head: str | None,
        seen: witness.Seen | None,
        start: int,
    ) -> list[str]:
        """``_verify`` for the rows from ``start - 1`` on: the chain from the link stored
        there must reach the session row's head at its length (and this worker's witness
        where it reaches that far)."""
        if head is None:
            head = ""  # a journal written before links: nothing to continue from
        links = check_suffix(session, self.where, rows, witness.Seen(length, head), start)
        if start - 1 + len(links) != length:
            raise CorruptJournal(
                f"session {session!r} in {self.where}: the journal holds more records than "
                f"the {length} written",
                session,
                length,
                length,
                "record",
            )
        if seen is not None and seen.count >= start:
            check_suffix(session, self.where, rows, seen, start)
        return links

    def check_database(self) -> str:
        """``doctor``'s verdict on the database's own half (``check_files``): "ok", or what
        is wrong."""
        problems = self.check_files()
        return "ok" if not problems else "; ".join(problems)


def _column(value: Any) -> str | None:
    return column(value, nul=False)  # PostgreSQL's text holds no NUL


__all__ = ["LEASE_SECONDS", "PostgresStore", "ServerUnavailable", "shown_url"]
