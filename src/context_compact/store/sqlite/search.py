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
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from ...errors import LinkRefused
from .. import witness
from ..base import Record
from ..blobrefs import references, restore
from ..text import scan
from . import blobs as sqlite_blobs
from . import checks as sqlite_checks
from . import journal as sqlite_journal
from . import tx as sqlite_tx
from .index import Found, Incomplete, SideIndex
from .journal import Entry

PAGE = 500  # positions read per step while catching up


def _kind(body: object) -> object:
    return body.get("kind") if isinstance(body, dict) else None


class SqliteSearch:
    """The search half of ``SqliteStore`` (which provides ``_db``, ``_lock``, ``records``)."""

    _db: sqlite3.Connection
    _lock: threading.Lock
    db_path: Path
    file_mode: int
    read_only: str | None
    _index: SideIndex | None

    _lengths: dict[str, int]
    _heads: dict[str, str]

    def records(self, session: str) -> Iterator[Record]:
        raise NotImplementedError

    def _head(self, session: str, length: int, seen: witness.Seen | None = None) -> str:
        raise NotImplementedError

    def _witness(self, session: str) -> Path:
        raise NotImplementedError

    def _checked(self, session: str) -> None:
        """The session's rows checked against their chain and witness (``CorruptJournal``)
        unless this store wrote or checked all of them already: a search never answers from
        a journal that is not what was written. Rows only, no JSON: cheaper than ``records``.
        The witness is read before the snapshot, as ``records`` reads it."""
        witness.settled(self._witness(session), lambda seen: self._check(session, seen))

    def _check(self, session: str, seen: witness.Seen | None) -> None:
        with self._lock:
            sqlite_tx.begin(self._db)
            try:
                length = self._db.execute(
                    "SELECT length FROM sessions WHERE id = ?", (session,)
                ).fetchone()[0]
                if session not in self._heads or self._lengths.get(session) != length:
                    self._heads[session] = self._head(session, length, seen)
                    self._lengths[session] = length
            finally:
                self._db.execute("COMMIT")

    def search(self, session: str, query: str) -> Iterator[Record]:
        """The session's message records holding ``query`` (``text.matches``), in order."""
        with self._lock:
            row = self._db.execute("SELECT created FROM sessions WHERE id = ?", (session,))
            found = row.fetchone()
        if found is None:
            raise KeyError(f"no session {session!r} in {self.db_path}")
        self._checked(session)
        if self.read_only is None:
            if self._index is None:
                self._index = SideIndex(Path(f"{self.db_path}-search"), self.file_mode)
            try:
                hits = self._index.search(
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
        return scan(self.records(session), query)

    def _messages(self, session: str, entries: list[Entry]) -> list[tuple[int, Record]]:
        """``(pos, record)`` of the message records among ``entries`` (inside the lock)."""
        found = [(pos, json.loads(body)) for pos, body, _ in entries]
        found = [(pos, body) for pos, body in found if _kind(body) == "message"]
        wanted: set[str] = set()
        for _, body in found:
            references(body, wanted)
        blobs = sqlite_blobs.fetch(self._db, wanted)
        sqlite_checks.verify_blobs(session, str(self.db_path), [wanted], blobs)
        return [(pos, restore(body, blobs.__getitem__)) for pos, body in found]

    def _catch(self, session: str, start: int) -> Iterator[tuple[int, int, int, Record | None]]:
        with self._lock:
            length = self._db.execute(
                "SELECT length FROM sessions WHERE id = ?", (session,)
            ).fetchone()[0]
        if length < start:
            raise Incomplete(f"session {session!r} is shorter than its index")
        pos = start
        while pos < length:
            stop = min(pos + PAGE, length)
            with self._lock:
                page = self._messages(session, sqlite_journal.read(self._db, session, pos, stop))
            for at, record in page:
                yield at, 0, 0, record
            pos = stop
            yield pos, 0, 0, None

    def _fetch(self, session: str, found: list[Found]) -> Iterator[Record]:
        positions = [pos for pos, _, _ in found]
        for at in range(0, len(positions), PAGE):
            part = positions[at : at + PAGE]
            with self._lock:
                rows = self._messages(session, sqlite_journal.at(self._db, session, part))
            for _, record in rows:
                yield record
