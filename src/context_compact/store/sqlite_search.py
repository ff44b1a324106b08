"""SqliteStore's ``search``: the side FTS5 index (``search.py``) over its ``messages`` rows.

The index file is ``<db>-search``. A search first checks the session's rows against their
hash chain and witness (once per store object and journal length; ``CorruptJournal`` as
``records`` raises it), and the blobs of every row it returns against their hashes.
Catching up reads the session's message rows from the position indexed so far to the
journal's length, a page at a time; a candidate is read back by its position. A store that
cannot write the index (read only) or finds the journal shorter than indexed scans instead
(``text.scan`` over ``records``, which also reports a damaged journal).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from . import sqlite_blobs, sqlite_checks
from .base import Record
from .blobrefs import references, restore
from .search import Found, Incomplete, SideIndex
from .text import scan

PAGE = 500  # rows read per step while catching up


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

    def _head(self, session: str, length: int) -> str:
        raise NotImplementedError

    def _checked(self, session: str) -> None:
        """The session's rows checked against their chain and witness (``CorruptJournal``)
        unless this store wrote or checked all of them already: a search never answers from
        a journal that is not what was written. Rows only, no JSON: cheaper than ``records``."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                length = self._db.execute(
                    "SELECT length FROM sessions WHERE id = ?", (session,)
                ).fetchone()[0]
                if session not in self._heads or self._lengths.get(session) != length:
                    self._heads[session] = self._head(session, length)
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
            except (Incomplete, sqlite3.Error, OSError):
                hits = None
            if hits is not None:
                return iter(hits)
        return scan(self.records(session), query)

    def _rows(self, query: str, args: list[object]) -> list[tuple[int, Record]]:
        """``(pos, record)`` of the message rows ``query`` selects (inside the lock)."""
        rows = self._db.execute(query, args).fetchall()
        bodies = [json.loads(body) for _, body in rows]
        wanted: set[str] = set()
        for body in bodies:
            references(body, wanted)
        blobs = sqlite_blobs.fetch(self._db, wanted)
        sqlite_checks.verify_blobs(str(args[0]), str(self.db_path), [wanted], blobs)
        pairs = zip(rows, bodies, strict=True)
        return [(int(row[0]), restore(body, blobs.__getitem__)) for row, body in pairs]

    def _catch(self, session: str, start: int) -> Iterator[tuple[int, int, int, Record | None]]:
        with self._lock:
            length = self._db.execute(
                "SELECT length FROM sessions WHERE id = ?", (session,)
            ).fetchone()[0]
        if length < start:
            raise Incomplete(f"session {session!r} is shorter than its index")
        pos = start
        while pos < length:
            with self._lock:
                page = self._rows(
                    "SELECT pos, body FROM messages WHERE session = ? AND pos >= ? AND pos < ? "
                    "ORDER BY pos LIMIT ?",
                    [session, pos, length, PAGE],
                )
            for at, record in page:
                yield at, 0, 0, record
            pos = page[-1][0] + 1 if len(page) == PAGE else length
            yield pos, 0, 0, None

    def _fetch(self, session: str, found: list[Found]) -> Iterator[Record]:
        positions = [pos for pos, _, _ in found]
        for at in range(0, len(positions), PAGE):
            part = positions[at : at + PAGE]
            marks = ",".join("?" * len(part))
            with self._lock:
                rows = self._rows(
                    f"SELECT pos, body FROM messages WHERE session = ? AND pos IN ({marks}) "
                    "ORDER BY pos",
                    [session, *part],
                )
            for _, record in rows:
                yield record
