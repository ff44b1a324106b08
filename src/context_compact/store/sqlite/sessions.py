"""SqliteStore's journal part: sessions, their records in rows, one writer per session.

The invariants are ``sqlite/store.py``'s; the rows ``sqlite/journal.py``'s, their checks
``sqlite/checks.py``'s. Every public method runs in the database's ``mapped`` block.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import witness
from ..base import CHECKPOINT_KIND as MARK
from ..base import Meta
from ..blobrefs import externalize, references
from ..codec import Record, dumps
from ..disk import Root
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
from ..nofollow import not_a_link
from . import blobs as sqlite_blobs
from . import checks as sqlite_checks
from . import journal as sqlite_journal
from . import tx as sqlite_tx
from .database import Database
from .files import SqliteLedger
from .tx import CHECKPOINT_EVERY, Checkpointer


class SqliteJournal:
    """``base.Journal`` in the database ``db`` (with ``delete_session``, ``writer`` and
    ``base.Checkpointed``); a turn's file rows (``ledger``) commit with its append."""

    def __init__(self, db: Database, root: Root, ledger: SqliteLedger) -> None:
        self.db = db
        self.folder = root
        self.ledger = ledger
        self._checkpointer: Checkpointer | None = None
        self._appends = 0
        self.lengths: dict[str, int] = {}  # journal length last read or written, per session
        self._leases: dict[str, float] = {}  # sessions this store holds -> last heartbeat
        self.heads: dict[str, str] = {}  # the last link of each session's journal known here
        self._witnesses = Path(f"{db.path}-heads")  # <session>: witness.py

    def close(self) -> None:
        """Stop the checkpointer and release the leases (the database is closed after)."""
        if self._checkpointer is not None:
            self._checkpointer.stop()
        with self.db.lock:
            if self._leases:
                me = this_process()
                with contextlib.suppress(sqlite3.Error):
                    self.db.connection.executemany(
                        "DELETE FROM writers WHERE session = ? AND pid = ? AND host = ?",
                        [(s, me.pid, me.host) for s in self._leases],
                    )
                self._leases.clear()

    # -- the session journal ---------------------------------------------------------------------
    def create_session(self, meta: Meta) -> str:
        with self.db.mapped:
            session, full = new_meta(meta)
            self.db.refuse_writes()
            try:
                with self.db.lock:
                    self.db.connection.execute(
                        "INSERT INTO sessions (id, created, meta) VALUES (?, ?, ?)",
                        (session, full["created"], dumps(full)),
                    )
            except sqlite3.IntegrityError:
                raise SessionExists(
                    f"session {session!r} already exists in {self.db.path}"
                ) from None
            self.lengths[session] = 0
            return session

    def session_meta(self, session: str) -> Meta | None:
        with self.db.mapped:
            if not valid_session_id(session):
                return None
            with self.db.lock:
                row = self.db.connection.execute(
                    "SELECT meta FROM sessions WHERE id = ?", (session,)
                ).fetchone()
            return None if row is None else dict(json.loads(row[0]))

    def list_sessions(self) -> list[Meta]:
        with self.db.mapped:
            with self.db.lock:
                rows = self.db.connection.execute(
                    "SELECT meta FROM sessions ORDER BY created DESC, rowid DESC"
                ).fetchall()
            return [json.loads(row[0]) for row in rows]

    def append(self, session: str, records: list[Record]) -> None:
        with self.db.mapped:
            check_records(records)
            if not valid_session_id(session):
                raise KeyError(f"no session {session!r} in {self.db.path}")
            # The JSON and hashing work happens before the write lock is taken.
            blobs: dict[str, bytes] = {}
            bodies = [dumps(externalize(record, blobs)) for record in records]
            with self.db.lock, self.db.transaction() as transaction:
                found = self.db.connection.execute(
                    "SELECT length FROM sessions WHERE id = ?", (session,)
                )
                start = found.fetchone()
                if start is None:
                    raise KeyError(f"no session {session!r} in {self.db.path}")
                taken = self._hold(session, start[0])
                # The turn's files first: no record committed names a path the database lacks.
                self.ledger.apply_pending()
                done = len(self.ledger.pending)

                def committed() -> None:
                    del self.ledger.pending[:done]
                    self._took(session, taken)

                transaction.after = committed
                head = self.heads.get(session)
                if head is None or self.lengths.get(session) != start[0]:
                    head = self.head(session, start[0])
                links = []
                for body in bodies:
                    head = witness.link(head, body.encode("ascii"))
                    links.append(head)
                sqlite_blobs.insert(self.db.connection, blobs.items(), self.ledger.compress)
                rows = sqlite_journal.rows(session, start[0], bodies, links, self.ledger.compress)
                self.db.connection.executemany(sqlite_journal.INSERT, rows)
                marks = [
                    (session, start[0] + i) for i, r in enumerate(records) if r["kind"] == MARK
                ]
                if marks:
                    self.db.connection.executemany(
                        "INSERT INTO marks (session, pos) VALUES (?, ?)", marks
                    )
                self.db.connection.execute(
                    "UPDATE sessions SET length = ? WHERE id = ?",
                    (start[0] + len(records), session),
                )
            self.lengths[session] = start[0] + len(records)
            self.heads[session] = head
            if records:
                where = self.witness_path(session)
                witness.write(
                    where, start[0] + len(records), head, self.folder.durable, self.folder.file_mode
                )
            self._appends += 1
            if self._appends % CHECKPOINT_EVERY == 0:
                if self._checkpointer is None:
                    self._checkpointer = Checkpointer(str(self.db.path), self.db.lock)
                self._checkpointer.wake()

    def records(self, session: str) -> Iterator[Record]:
        return self.records_from(session, 0)

    def checkpoints(self, session: str) -> list[int]:
        with self.db.mapped:
            with self.db.lock:
                found = self.db.connection.execute(
                    "SELECT pos FROM marks WHERE session = ? ORDER BY pos", (session,)
                ).fetchall()
            return [int(row[0]) for row in found]

    def records_from(self, session: str, start: int) -> Iterator[Record]:
        with self.db.mapped:
            return settled_records(
                session,
                self.db.path,
                self.witness_path(session),
                lambda seen: self._read(session, seen, start),
            )

    def _read(
        self, session: str, seen: witness.Seen | None, start: int = 0
    ) -> tuple[list[Any], dict[str, bytes]]:
        with self.db.lock:
            # One read transaction: the journal and its blobs as of one moment.
            sqlite_tx.begin(self.db.connection)
            try:
                if not self.db.connection.execute(
                    "SELECT 1 FROM sessions WHERE id = ?", (session,)
                ).fetchone():
                    raise KeyError(f"no session {session!r} in {self.db.path}")
                if start > 0:
                    rows = sqlite_journal.read(self.db.connection, session, start - 1)
                    links = sqlite_checks.verify_suffix(
                        session, str(self.db.path), rows, seen, start
                    )
                    rows = rows[1:]
                else:
                    rows = sqlite_journal.read(self.db.connection, session)
                    links = self._verify(session, rows, seen)
                bodies = [json.loads(row[1]) for row in rows]
                wanted = [references(b, set()) for b in bodies]
                blobs = sqlite_blobs.fetch(self.db.connection, set().union(*wanted))
                sqlite_checks.verify_blobs(session, str(self.db.path), wanted, blobs)
                self.lengths[session] = start + len(bodies)
                self.heads[session] = links[-1] if links else witness.ROOT
            finally:
                self.db.connection.execute("COMMIT")
        return bodies, blobs

    # -- integrity (witness.py, sqlite/checks.py) -------------------------------------------------
    def witness_path(self, session: str) -> Path:
        not_a_link(self._witnesses)
        return self._witnesses / session

    def _verify(
        self, session: str, rows: list[sqlite_journal.Entry], seen: witness.Seen | None
    ) -> list[str]:
        return sqlite_checks.verify_rows(session, str(self.db.path), rows, seen)

    def head(self, session: str, length: int, seen: witness.Seen | None = None) -> str:
        """The last link of the session's first ``length`` rows (inside the caller's lock;
        ``seen``: the witness as read before the caller's read transaction began, else read
        now, inside a write transaction where no other append can land)."""
        if seen is None:
            seen = witness.read(self.witness_path(session))
        rows = sqlite_journal.read(self.db.connection, session, 0, length)
        return self._verify(session, rows, seen)[-1] if length else witness.ROOT

    # -- one writer per session ------------------------------------------------------------------
    def claim(self, session: str) -> None:
        """Take the session's lease now (``SessionLocked`` if another live process holds it),
        before any append: a command that resumes a session says so before it starts."""
        with self.db.mapped, self.db.lock, self.db.transaction() as transaction:
            found = self.db.connection.execute(
                "SELECT length FROM sessions WHERE id = ?", (session,)
            )
            start = found.fetchone()
            if start is None:
                raise KeyError(f"no session {session!r} in {self.db.path}")
            taken = self._hold(session, start[0], check_length=False)
            transaction.after = lambda: self._took(session, taken)

    def delete_session(self, session: str) -> None:
        """Remove the session and its journal (``SessionLocked`` if another live process writes
        it). The files its views named stay: they are stored by content and may be shared."""
        with self.db.mapped:
            with self.db.lock, self.db.transaction():
                found = self.db.connection.execute(
                    "SELECT length FROM sessions WHERE id = ?", (session,)
                )
                if found.fetchone() is None:
                    raise KeyError(f"no session {session!r} in {self.db.path}")
                self._hold(session, 0, check_length=False)
                for table in ("journal", "marks", "writers"):
                    self.db.connection.execute(f"DELETE FROM {table} WHERE session = ?", (session,))
                self.db.connection.execute("DELETE FROM sessions WHERE id = ?", (session,))
            self._leases.pop(session, None)
            self.lengths.pop(session, None)

    def writer(self, session: str) -> Owner | None:
        """The live process holding the session's lease, if any."""
        with self.db.mapped:
            with self.db.lock:
                row = self.db.connection.execute(
                    "SELECT pid, host, started, heartbeat FROM writers WHERE session = ?",
                    (session,),
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
            row = self.db.connection.execute(
                "SELECT pid, host, started, heartbeat FROM writers WHERE session = ?", (session,)
            ).fetchone()
            if row is not None:
                owner = Owner(*row)
                if not same_process(owner) and alive(owner):
                    raise SessionLocked(locked_message(session, owner, str(self.db.path)))
        known = self.lengths.get(session)
        if check_length and known is not None and known != length:
            raise SessionLocked(changed_message(session, str(self.db.path), known, length))
        if held is None:
            me = this_process()
            self.db.connection.execute(
                "INSERT OR REPLACE INTO writers (session, pid, host, started, heartbeat) "
                "VALUES (?, ?, ?, ?, ?)",
                (session, me.pid, me.host, me.started, now),
            )
            return now
        if now - held >= HEARTBEAT_SECONDS:
            self.db.connection.execute(
                "UPDATE writers SET heartbeat = ? WHERE session = ?", (now, session)
            )
            return now
        return None

    def _took(self, session: str, when: float | None) -> None:
        if when is not None:
            self._leases[session] = when


__all__ = ["SqliteJournal"]
