"""PostgresStore: the journal and a copy of every text in PostgreSQL, for a fleet of workers.

The same store as ``SqliteStore`` (``sqlite/store.py``), on a server every worker reaches: the
database (``postgres/schema.py``) is the truth; the files under ``root`` are a local cache the
model opens with a plain file tool, at ``FileStore``'s layout (``store/codec.py``). Needs the
extra ``context-compact[postgres]`` (psycopg 3 and its pool). Its parts: the connection and
errors (``postgres/base.py``), the archive of the files any worker reads
(``postgres/files.py``), one writer per session with fencing tokens (``postgres/lease.py``),
and the journal (``postgres/sessions.py``).

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

import os
from collections.abc import Iterator
from pathlib import Path

from ..codec import Record
from ..composed import Composed
from ..disk import Root
from ..lease import Owner
from .base import LEASE_SECONDS, PgConnection, ServerUnavailable, shown_url
from .files import PgArchive, PgLedger
from .lease import PgLease
from .sessions import PgJournal


class PostgresStore(Composed):
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
        self._place(Root(Path.cwd() if root is None else root, durable))
        self.pg = PgConnection(url, self.folder, schema, lease_seconds, pool_size, durable)
        self.url, self.schema, self.where = url, self.pg.schema, self.pg.where
        self.lease_seconds = lease_seconds
        self.instance = self.pg.instance
        """This schema's id, made with it: a schema dropped and made again is another one."""
        self.files = PgLedger(self.pg, self.folder)
        self.archive = PgArchive(self.folder, self.files)
        self.lease = PgLease(self.pg)
        self.journal = self.sessions = PgJournal(self.pg, self.lease, self.folder)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({shown_url(self.url)!r}, root={self.root!r})"

    # -- besides the doors -----------------------------------------------------------------------
    def writer(self, session: str) -> Owner | None:
        """The live writer holding the session's lease, if any."""
        return self.lease.writer(session)

    def token(self, session: str) -> int | None:
        """The fencing token this store writes ``session`` with (None: not its writer)."""
        return self.lease.token(session)

    def checkpoints(self, session: str) -> list[int]:
        return self.sessions.checkpoints(session)

    def records_from(self, session: str, start: int) -> Iterator[Record]:
        return self.sessions.records_from(session, start)

    def check_database(self) -> str:
        """``doctor``'s verdict on the database's own half (``PgLedger.check_files``): "ok",
        or what is wrong."""
        problems = self.files.check_files()
        return "ok" if not problems else "; ".join(problems)

    def close(self) -> None:
        self.sessions.close()


__all__ = ["LEASE_SECONDS", "PostgresStore", "ServerUnavailable", "shown_url"]
