"""PostgresStore's journal part: sessions and their records in rows, on the server.

The invariants are ``postgres/store.py``'s; the lease ``postgres/lease.py``'s. Every public
method runs in the server's ``mapped`` block.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import witness
from ..base import CHECKPOINT_KIND, Meta, Record
from ..blobrefs import externalize, references
from ..codec import dumps
from ..disk import Root
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
from .base import PgConnection
from .files import _INSERT_BLOB
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


class PgJournal:
    """``base.Journal`` on the server ``pg`` (with ``base.Checkpointed``), one writer per
    session by ``lease``; its witnesses under ``root``."""

    def __init__(self, pg: PgConnection, lease: PgLease, root: Root) -> None:
        self.pg = pg
        self.lease = lease
        self.folder = root

    def claim(self, session: str) -> None:
        self.lease.claim(session)

    def close(self) -> None:
        try:
            self.lease.release_all()
        finally:
            self.pg.close()

    # -- the session journal ---------------------------------------------------------------------
    def create_session(self, meta: Meta) -> str:
        with self.pg.mapped:
            session, full = new_meta(meta)
            with self.pg.connection() as conn:
                created = conn.execute(
                    "INSERT INTO sessions (id, created, meta) VALUES (%s, %s, %s) "
                    "ON CONFLICT DO NOTHING RETURNING id",
                    (session, full["created"], dumps(full)),
                ).fetchone()
            if created is None:
                raise SessionExists(f"session {session!r} already exists in {self.pg.where}")
            with self.pg.lock:
                self.pg.lengths[session] = 0
                self.pg.heads[session] = (0, witness.ROOT)
            return session

    def session_meta(self, session: str) -> Meta | None:
        with self.pg.mapped:
            if not valid_session_id(session):
                return None
            with self.pg.connection() as conn:
                row = conn.execute("SELECT meta FROM sessions WHERE id = %s", (session,)).fetchone()
            return None if row is None else dict(json.loads(row[0]))

    def list_sessions(self) -> list[Meta]:
        with self.pg.mapped, self.pg.connection() as conn:
            rows = conn.execute("SELECT meta FROM sessions ORDER BY created DESC, seq DESC")
            return [json.loads(row[0]) for row in rows]

    def append(self, session: str, records: list[Record]) -> None:
        with self.pg.mapped:
            check_records(records)
            if not valid_session_id(session):
                raise KeyError(f"no session {session!r} in {self.pg.where}")
            # The JSON and hashing work happens before the transaction starts.
            blobs: dict[str, bytes] = {}
            bodies = [dumps(externalize(record, blobs)) for record in records]
            done = self._append_steady(session, records, bodies, blobs)
            length, last = done or self._append_checked(session, records, bodies, blobs)
            with self.pg.lock:
                self.pg.lengths[session] = length
                self.pg.heads[session] = (length, last or witness.ROOT)
            if records:
                witness.write(
                    self._witness(session),
                    length,
                    last or "",
                    self.folder.durable,
                    self.folder.file_mode,
                )

    def _append_steady(
        self, session: str, records: list[Record], bodies: list[str], blobs: dict[str, bytes]
    ) -> tuple[int, str | None] | None:
        """The append of a writer that holds the lease and knows the journal (``steady``),
        in one round trip: the server checks, once the row is locked, what the writer takes
        as known (``still_mine``); if it is not so, nothing of the batch is written and None
        is returned (as when not steady): ``_append_checked`` reads and says why."""
        steady = self.lease.steady(session)
        if steady is None:
            return None
        start, known, token = steady
        head = None if known == witness.ROOT else known  # the session's row: NULL before any
        links = chain(known, bodies)
        last = links[-1] if links else head
        with self.pg.connection() as conn:
            try:
                with self.pg.one_trip(conn):
                    self.lease.still_mine(conn, session, start, head, token)
                    self._write(conn, session, start, records, bodies, links, last, blobs)
            except self.pg.psycopg.errors.DivisionByZero:
                return None
        return start + len(records), last

    def _append_checked(
        self, session: str, records: list[Record], bodies: list[str], blobs: dict[str, bytes]
    ) -> tuple[int, str | None]:
        """The append in two round trips: BEGIN with the session's locked row (the lease and
        the journal's length and head are checked on it, the journal read whole if this
        store has not checked it at that length), then the batch's rows with the COMMIT."""
        with self.pg.batch() as conn:
            start, head, writer = self.lease.lock_session(conn, session)
            committed = self.lease.hold(conn, session, start, writer)
            if self.pg.heads.get(session) != (start, head or witness.ROOT):
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
        with self.pg.mapped:
            with self.pg.connection() as conn:
                # The kind written out, not a parameter: a prepared statement's generic plan could
                # not use the partial index on it, and would read every record of the session.
                found = conn.execute(
                    f"SELECT pos FROM records WHERE session = %s AND kind = '{CHECKPOINT_KIND}' "
                    "ORDER BY pos",
                    (session,),
                ).fetchall()
            return [int(row[0]) for row in found]

    def records_from(self, session: str, start: int) -> Iterator[Record]:
        with self.pg.mapped:
            return settled_records(
                session,
                self.pg.where,
                self._witness(session),
                lambda seen: self._read(session, seen, start),
            )

    def _read(
        self, session: str, seen: witness.Seen | None, start: int = 0
    ) -> tuple[list[Any], dict[str, bytes]]:
        with self.pg.connection() as conn, self.pg.one_trip(conn):
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
                raise KeyError(f"no session {session!r} in {self.pg.where}")
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
        check_blobs(session, self.pg.where, wanted, blobs)
        with self.pg.lock:
            self.pg.lengths[session] = start + len(bodies)
            self.pg.heads[session] = (start + len(bodies), links[-1] if links else witness.ROOT)
        return bodies, blobs

    # -- integrity ------------------------------------------------------------------------------
    def _witness(self, session: str) -> Path:
        # inside: a folder on the way that is a planted link is refused, never followed.
        return self.folder.inside(f".context-compact/heads/{self.pg.instance}/{session}")

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
        links = check_chain(session, self.pg.where, rows)
        if len(links) > length:
            raise CorruptJournal(
                f"session {session!r} in {self.pg.where}: the journal holds {len(links)} records "
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
        witness.verify(session, self.pg.where, links, said, "record")
        witness.verify(session, self.pg.where, links, seen, "record")
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
        links = check_suffix(session, self.pg.where, rows, witness.Seen(length, head), start)
        if start - 1 + len(links) != length:
            raise CorruptJournal(
                f"session {session!r} in {self.pg.where}: the journal holds more records than "
                f"the {length} written",
                session,
                length,
                length,
                "record",
            )
        if seen is not None and seen.count >= start:
            check_suffix(session, self.pg.where, rows, seen, start)
        return links


def _column(value: Any) -> str | None:
    return column(value, nul=False)  # PostgreSQL's text holds no NUL


__all__ = ["PgJournal"]
