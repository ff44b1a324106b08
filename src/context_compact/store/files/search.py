"""FileStore's ``search``: the side FTS5 index (``sqlite/index.py``) over its journal lines.

A search first checks the journal against its chain and witness as ``records`` does, unless
this store object wrote or checked it as it is now (its size is the one it knows): a process
that resumed or wrote the session pays nothing more, a fresh one reads the journal once.
The index file is ``.task_outputs/search-index.db`` under root (no store call writes there,
so ``append_file`` cannot reach it). A document's locator is the byte offset of its journal
line and its place in the line's batch; catching up reads whole lines from the offset indexed
so far (a torn last line is not a record yet and waits). A line that does not parse, or a
journal shorter than indexed, is ``Incomplete``: the search scans ``records``, whose checks
say what is wrong.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from ...errors import LinkRefused
from ..codec import Record
from ..nofollow import open_file
from ..sqlite.index import Found, Incomplete, SideIndex
from ..text import scan
from . import journal as file_journal
from .sessions import FileJournal

INDEX = ".task_outputs/search-index.db"
READ = 4 << 20  # bytes read per step while catching up


class FileSearch:
    """``base.Searches`` for a ``FileJournal``: the side index at ``INDEX``, opened by the
    first search; ``close`` releases it."""

    def __init__(self, journal: FileJournal) -> None:
        self.journal = journal
        self.index: SideIndex | None = None

    def _checked(self, session: str, path: Path) -> None:
        """Every line checked against the chain and the witness (``CorruptJournal``) unless
        this store wrote or checked the journal as it is now: a search never answers from a
        journal that is not what was written."""
        try:
            size = path.lstat().st_size
        except FileNotFoundError:
            size = 0
        if self.journal.sizes.get(session) != size:
            self.journal.load(session)

    def search(self, session: str, query: str) -> Iterator[Record]:
        """The session's message records holding ``query`` (``text.matches``), in order."""
        meta = self.journal.session_meta(session)
        if meta is None:
            raise KeyError(f"no session {session!r} in {self.journal.root}")
        if self.index is None:
            folder = self.journal.folder
            self.index = SideIndex(folder.inside(INDEX), folder.file_mode)
        path = self.journal.journal_path(session)
        self._checked(session, path)
        try:
            hits = self.index.search(
                session,
                str(meta.get("created")),
                query,
                lambda pos, offset: self._catch(path, pos, offset),
                lambda found: self._fetch(path, found),
            )
        except LinkRefused:
            raise  # a planted link is said, not worked around
        except (Incomplete, OSError):  # StoreRefused, CorruptStore: the index's
            hits = None
        return iter(hits) if hits is not None else scan(self.journal.records(session), query)

    def _catch(
        self, path: Path, pos: int, offset: int
    ) -> Iterator[tuple[int, int, int, Record | None]]:
        try:
            handle = os.fdopen(open_file(path, os.O_RDONLY), "rb")  # closed below
        except FileNotFoundError:
            if offset:
                raise Incomplete(f"{path} is gone") from None
            return
        with handle:
            if os.fstat(handle.fileno()).st_size < offset:
                raise Incomplete(f"{path} is shorter than its index")
            handle.seek(offset)
            rest = b""
            while True:
                data = handle.read(READ)
                if not data:
                    return  # what is left in rest is a torn last line: not a record yet
                rest += data
                start = 0
                while (end := rest.find(b"\n", start)) >= 0:
                    batch = _parse(rest[start:end])
                    if batch is None:
                        raise Incomplete(f"{path}: the line at byte {offset} does not parse")
                    for part, record in enumerate(batch):
                        yield pos + part, offset, part, record
                    pos += len(batch)
                    offset += end + 1 - start
                    start = end + 1
                    yield pos, offset, 0, None
                rest = rest[start:]

    def close(self) -> None:
        if self.index is not None:
            self.index.close()

    def _fetch(self, path: Path, found: list[Found]) -> Iterator[Record]:
        with os.fdopen(open_file(path, os.O_RDONLY), "rb") as handle:
            line_at, batch = -1, None
            for _, offset, part in found:
                if offset != line_at:
                    handle.seek(offset)
                    line_at, batch = offset, _parse(handle.readline().rstrip(b"\n"))
                if batch is not None and part < len(batch):
                    yield batch[part]


def _parse(line: bytes) -> list[Record] | None:
    return file_journal.batch_of(line)[0]
