"""A search index of a store's journals: SQLite FTS5 trigrams in a side file, caught up on read.

``SqliteStore`` and ``FileStore`` search with it (``base.Searches``): ``search(session,
query)`` must answer exactly what ``text.scan`` answers (the message records whose casefolded
text holds the casefolded query, in journal order). Scanning reads
and parses the whole journal; this index narrows it to the records that can match:

* Each message record's searchable text (``text.searchable``: already casefolded, lone
  surrogates as U+FFFD) is a document of a contentless FTS5 table with the ``trigram``
  tokenizer (``case_sensitive 1``: the folding is Python's, so it is exactly the scan's),
  ``detail=none``: the index keeps which documents hold each 3-character sequence, not where.
* A query of 3 or more characters (no lone surrogate) asks for the documents holding all of
  up to ``MAX_TRIGRAMS`` of its trigrams (``trigrams``). Every document that holds the
  query holds them, so no match is missed; each candidate is then read from the journal and
  tested with ``text.matches``, so no false one is returned. Shorter queries are scanned.
* The index follows the journal on read: ``progress`` records, per session, the journal
  position (and the store's locator: a byte offset for ``FileStore``) indexed so far and the
  session's ``created`` stamp; a search first indexes what was appended since, in one
  transaction, so it always sees the whole journal. A session deleted and created again under
  the same id has another stamp: its old documents are dropped and it is indexed afresh.
  Appends never touch the index: indexing costs ~2 ms per turn of tool output here, too much
  for ``prepare``; the first search after N turns pays for those N (``bench --store-io``).
* The file is derived data. It lives beside the store's own files (``SqliteStore``:
  ``<db>-search``; ``FileStore``: ``.task_outputs/search-index.db``), in WAL mode with
  ``synchronous = NORMAL`` (a kill or power loss loses at most the last catch-up, which the
  next search redoes); one that cannot be opened or is of another version is rebuilt. A
  symbolic link in its place (or its ``-wal``'s) is refused, never followed (``nofollow.py``).
  SQLite's errors leave ``SideIndex`` as ours (``sqlite/refusals.py``): ``StoreRefused`` or
  ``CorruptStore`` naming the index file; a store that gets one scans instead.

Why a side file and not a table in the SqliteStore's database: catching up holds a write
lock for as long as FTS5 takes, and in the store's own database that lock would stall every
``append`` of every session meanwhile. FileStore gets the same index: one implementation,
and SQLite is in the standard library (an inverted index file of our own would need its own
crash safety).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ...errors import Incomplete as Incomplete  # kept importable from here
from ...errors import StoreRefused
from ..boundary import map_errors
from ..codec import Record
from ..disk import folder_mode, make_dirs
from ..nofollow import sqlite_files_plain
from ..text import matches, searchable
from .refusals import translate
from .tx import begin

VERSION = 1
MAX_TRIGRAMS = 8
_SURROGATE = re.compile("[\ud800-\udfff]")
_SCHEMA = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS doc_text USING fts5(body, "
    "tokenize = 'trigram case_sensitive 1', detail = none, content = '', columnsize = 0)",
    "CREATE TABLE IF NOT EXISTS docs (id INTEGER PRIMARY KEY, session TEXT NOT NULL, "
    "pos INTEGER NOT NULL, locator INTEGER NOT NULL, part INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS docs_by_session ON docs (session, pos)",
    "CREATE TABLE IF NOT EXISTS progress (session TEXT PRIMARY KEY, stamp TEXT NOT NULL, "
    "pos INTEGER NOT NULL, locator INTEGER NOT NULL)",
)

Found = tuple[int, int, int]
"""A candidate: the record's journal position and where the store finds it (``FileStore``:
the byte offset of its line and its place in the line's batch)."""
Catch = Callable[[int, int], Iterable[tuple[int, int, int, Record | None]]]
"""``catch(pos, locator)``: the records from there on as ``(pos, locator, part, record)``;
an item whose record is None is a point the index may record as caught up to (``pos`` and
``locator`` of what follows). ``Incomplete`` when the journal cannot be read to its end."""


def trigrams(folded: str) -> list[str] | None:
    """Trigrams every document holding ``folded`` holds: disjoint ones from its start, and its
    last one (each costs the FTS query a list of documents, and a few narrow it enough), at
    most ``MAX_TRIGRAMS``; None when the index cannot answer (short, or a lone surrogate)."""
    if len(folded) < 3 or _SURROGATE.search(folded):
        return None
    picked = [folded[i : i + 3] for i in range(0, len(folded) - 2, 3)]
    if len(picked) > MAX_TRIGRAMS:
        step = (len(picked) - 1) / (MAX_TRIGRAMS - 2)
        picked = [picked[round(k * step)] for k in range(MAX_TRIGRAMS - 1)]
    picked.append(folded[-3:])
    return list(dict.fromkeys(picked))


def _phrase(trigram: str) -> str:
    return '"' + trigram.replace('"', '""') + '"'


def _set_up(db: sqlite3.Connection) -> int | None:
    """Make ``db`` an index of this version (new, or of this version already); an index of
    another version is left as it is, and its version returned."""
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    version: int = db.execute("PRAGMA user_version").fetchone()[0]
    if version not in (0, VERSION):
        return version
    for statement in _SCHEMA:
        db.execute(statement)
    db.execute(f"PRAGMA user_version = {VERSION}")
    return None


class SideIndex:
    """The index file of one store (see above). Thread-safe; ``close`` releases it."""

    def __init__(self, path: Path, file_mode: int = 0o600) -> None:
        self.path = path
        self.mapped = map_errors(lambda error: translate(error, path))  # naming the index
        self._mode = file_mode
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    def _open(self) -> sqlite3.Connection:
        if self._db is not None:
            return self._db
        for attempt in range(2):
            sqlite_files_plain(self.path)  # SQLite follows links: none may be there
            if not self.path.exists():
                make_dirs(self.path.parent, folder_mode(self._mode))
                with contextlib.suppress(FileExistsError):
                    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                    os.close(os.open(self.path, flags, self._mode))
            db = sqlite3.connect(
                str(self.path), timeout=30.0, isolation_level=None, check_same_thread=False
            )
            try:
                foreign = _set_up(db)
            except sqlite3.DatabaseError:
                db.close()
                if attempt:
                    raise
            else:
                if foreign is None:
                    self._db = db
                    break
                db.close()
                if attempt:
                    where = str(self.path)
                    raise StoreRefused(f"{where}: search index version {foreign}", where=where)
            # Derived data: a damaged or foreign index is rebuilt from the journals.
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(f"{self.path}{suffix}")
        assert self._db is not None
        return self._db

    def search(
        self, session: str, stamp: str, query: str, catch: Catch, fetch: FetchFn
    ) -> list[Record] | None:
        """The records of ``session`` matching ``query``, in journal order, or None when the
        index cannot answer this query (the caller scans)."""
        with self.mapped:
            folded = query.casefold()
            wanted = trigrams(folded)
            if wanted is None:
                return None
            with self._lock:
                db = self._open()
                self._catch_up(db, session, stamp, catch)
                rows = db.execute(
                    "SELECT DISTINCT d.pos, d.locator, d.part FROM doc_text CROSS JOIN docs AS d "
                    "ON d.id = doc_text.rowid "
                    "WHERE doc_text MATCH ? AND d.session = ? ORDER BY d.pos",
                    (" AND ".join(map(_phrase, wanted)), session),
                ).fetchall()
            found = [(int(pos), int(locator), int(part)) for pos, locator, part in rows]
            return [record for record in fetch(found) if matches(record, folded)]

    def _catch_up(self, db: sqlite3.Connection, session: str, stamp: str, catch: Catch) -> None:
        """Index what the journal holds past the session's progress (nothing is written when
        there is nothing new)."""
        while True:
            start = self._progress(db, session, stamp)
            items = iter(catch(*start))
            first = next(items, None)
            if first is None:
                return
            begin(db, "IMMEDIATE")
            try:
                if self._progress(db, session, stamp) != start:
                    db.execute("ROLLBACK")  # another process caught up meanwhile: look again
                    continue
                if start == (0, 0):
                    db.execute("DELETE FROM docs WHERE session = ?", (session,))
                end = start
                for at, where, part, record in itertools.chain([first], items):
                    if record is None:
                        end = (at, where)
                        continue
                    text = searchable(record)
                    if text is None:
                        continue
                    cursor = db.execute(
                        "INSERT INTO docs (session, pos, locator, part) VALUES (?, ?, ?, ?)",
                        (session, at, where, part),
                    )
                    db.execute(
                        "INSERT INTO doc_text (rowid, body) VALUES (?, ?)",
                        (cursor.lastrowid, _SURROGATE.sub("\ufffd", text)),
                    )
                db.execute(
                    "INSERT OR REPLACE INTO progress (session, stamp, pos, locator) "
                    "VALUES (?, ?, ?, ?)",
                    (session, stamp, *end),
                )
                db.execute("COMMIT")
                return
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

    @staticmethod
    def _progress(db: sqlite3.Connection, session: str, stamp: str) -> tuple[int, int]:
        """How far the session is indexed: (0, 0) when not at all, or under another stamp."""
        row = db.execute(
            "SELECT stamp, pos, locator FROM progress WHERE session = ?", (session,)
        ).fetchone()
        return (0, 0) if row is None or row[0] != stamp else (int(row[1]), int(row[2]))

    def close(self) -> None:
        with self.mapped, self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


FetchFn = Callable[[list[Found]], Iterator[Record]]
"""``fetch(found)``: the records at those candidates, in the order given."""
