"""SqliteStore's ``search``: the side FTS5 index (``sqlite/index.py``) over its message records.

The index file is ``<db>-search``. A search first checks the session's rows against their
hash chain and witness (once per store object and journal length; ``CorruptJournal`` as
``records`` raises it), and the blobs of every row it returns against their hashes.
Catching up reads the session's journal rows (``sqlite/journal.py``) from the position indexed
so far to the journal's length, ``PAGE`` positions at a time, and indexes the message records
among them; a candidate is read back by its position. A store that
cannot write the index (read only) or finds the journal shorter than indexed scans instead
(``text.scan`` over ``records``, which also reports a damaged journal).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from ...errors import LinkRefused
from .. import witness
from ..blobrefs import references, restore
from ..codec import Record
from ..text import scan
from . import blobs as sqlite_blobs
from . import checks as sqlite_checks
from . import journal as sqlite_journal
from . import tx as sqlite_tx
from .index import Found, Incomplete, SideIndex
from .journal import Entry
from .sessions import SqliteJournal

PAGE = 500  # positions read per step while catching up


def _kind(body: object) -> object:
    return body.get("kind") if isinstance(body, dict) else None


class SqliteSearch:
    """``base.Searches`` for a ``SqliteJournal``: the side index ``<db>-search``, opened by
    the first search of a store that can write; ``close`` releases it."""

    def __init__(self, journal: SqliteJournal) -> None:
        self.journal = journal
        self.db = journal.db
        self.index: SideIndex | None = None

    def close(self) -> None:
        if self.index is not None:
            self.index.close()

    def _checked(self, session: str) -> None:
        """The session's rows checked against their chain and witness (``CorruptJournal``)
        unless this store wrote or checked all of them already: a search never answers from
        a journal that is not what was written. Rows only, no JSON: cheaper than ``records``.
        The witness is read before the snapshot, as ``records`` reads it."""
        witness.settled(self.journal.witness_path(session), lambda seen: self._check(session, seen))

    def _check(self, session: str, seen: witness.Seen | None) -> None:
        with self.db.lock:
            sqlite_tx.begin(self.db.connection)
            try:
                length = self.db.connection.execute(
                    "SELECT length FROM sessions WHERE id = ?", (session,)
                ).fetchone()[0]
                if session not in self.journal.heads or self.journal.lengths.get(session) != length:
                    self.journal.heads[session] = self.journal.head(session, length, seen)
                    self.journal.lengths[session] = length
            finally:
                self.db.connection.execute("COMMIT")

    def search(self, session: str, query: str) -> Iterator[Record]:
        """The session's message records holding ``query`` (``text.matches``), in order."""
        with self.db.mapped:
            with self.db.lock:
                row = self.db.connection.execute(
                    "SELECT created FROM sessions WHERE id = ?", (session,)
                )
                found = row.fetchone()
            if found is None:
                raise KeyError(f"no session {session!r} in {self.db.path}")
            self._checked(session)
            if self.db.read_only is None:
                if self.index is None:
                    self.index = SideIndex(
                        Path(f"{self.db.path}-search"), self.journal.folder.file_mode
                    )
                try:
                    hits = self.index.search(
                        session,
                        str(found[0]),
                        query,
                        lambda pos, _: self._catch(session, pos),
                        lambda found: self._fetch(session, found),
                    )
                except LinkRefused:
                    raise  # a planted link is said, not worked around
                except (Incomplete, OSError):  # StoreRefused, CorruptStore: the index's
                    hits = None
                if hits is not None:
                    return iter(hits)
            return scan(self.journal.records(session), query)

    def _messages(self, session: str, entries: list[Entry]) -> list[tuple[int, Record]]:
        """``(pos, record)`` of the message records among ``entries`` (inside the lock)."""
        found = [(pos, json.loads(body)) for pos, body, _ in entries]
        found = [(pos, body) for pos, body in found if _kind(body) == "message"]
        wanted: set[str] = set()
        for _, body in found:
            references(body, wanted)
        blobs = sqlite_blobs.fetch(self.db.connection, wanted)
        sqlite_checks.verify_blobs(session, str(self.db.path), [wanted], blobs)
        return [(pos, restore(body, blobs.__getitem__)) for pos, body in found]

    def _catch(self, session: str, start: int) -> Iterator[tuple[int, int, int, Record | None]]:
        with self.db.lock:
            length = self.db.connection.execute(
                "SELECT length FROM sessions WHERE id = ?", (session,)
            ).fetchone()[0]
        if length < start:
            raise Incomplete(f"session {session!r} is shorter than its index")
        pos = start
        while pos < length:
            stop = min(pos + PAGE, length)
            with self.db.lock:
                page = self._messages(
                    session, sqlite_journal.read(self.db.connection, session, pos, stop)
                )
            for at, record in page:
                yield at, 0, 0, record
            pos = stop
            yield pos, 0, 0, None

    def _fetch(self, session: str, found: list[Found]) -> Iterator[Record]:
        positions = [pos for pos, _, _ in found]
        for at in range(0, len(positions), PAGE):
            part = positions[at : at + PAGE]
            with self.db.lock:
                rows = self._messages(session, sqlite_journal.at(self.db.connection, session, part))
            for _, record in rows:
                yield record
