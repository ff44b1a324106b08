"""FileStore's journal lines: parsing one, checking all of them, cutting a torn tail.

The format is ``files/store.py``'s: one line per append, ``{"batch": [records...],"link": H}\\n``,
``H`` the chain link after the batch (``witness.py``); a line written before links has none.
``check`` reads every whole line, recomputes the chain and compares it with each stored link
and with the witness read *before* the journal (so the journal holds at least what the
witness counts, also while another process appends): a line that is not what was written is
``CorruptJournal`` naming it; a torn last line (an append that never completed, or one in
progress) is not a line yet and is left out.

``check`` also reads a journal from a line on (``Tip``: the byte offset where that line
starts, the lines and records before it, the link stored before it): the chain continues from
that link and must reach the witness's link at its count, so the lines skipped are vouched
for by the witness; when it cannot be checked so (no witness that far) it is
``CorruptJournal`` and a full read decides.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ...errors import LinkRefused
from .. import witness
from ..base import Record
from ..journal import CorruptJournal
from ..nofollow import open_file

_LINK_TAIL = len(b',"link":""}') + 32


def batch_of(line: bytes) -> tuple[list[Record] | None, str | None, bytes]:
    """A line's batch (None unless whole), its stored link (None in a line written before
    links) and the batch's JSON bytes (what the link hashes)."""
    stored = None
    raw = line[len(b'{"batch":') : -1]
    if line.endswith(b'"}') and line[-_LINK_TAIL:].startswith(b',"link":"'):
        stored = line[-_LINK_TAIL + len(b',"link":"') : -2].decode("ascii", "replace")
        raw = line[len(b'{"batch":') : -_LINK_TAIL]
    try:
        parsed = json.loads(line)
        batch = parsed["batch"]
    except (ValueError, KeyError, TypeError, RecursionError):
        return None, None, raw
    if not isinstance(batch, list) or not line.startswith(b'{"batch":'):
        return None, None, raw
    if stored is not None and parsed.get("link") != stored:
        return None, None, raw
    return batch, stored, raw


@dataclass(frozen=True)
class Tip:
    """Where a line starts: its byte offset, the lines and records before it, and the chain's
    link after the line before it."""

    offset: int
    lines: int
    link: str
    records: int


START = Tip(0, 0, witness.ROOT, 0)


class Checked:
    """A journal as read and checked from ``start`` on: its records there, the chain's link
    after each line, and the bytes its whole lines take (from the file's start)."""

    def __init__(self, start: Tip, records: list[Record], links: list[str], size: int) -> None:
        self.start = start
        self.records = records
        self.links = links
        self.size = size

    @property
    def head(self) -> tuple[int, str]:
        return self.start.lines + len(self.links), self.links[-1] if self.links else (
            self.start.link
        )

    @property
    def count(self) -> int:
        """Records in the journal."""
        return self.start.records + len(self.records)


def check(
    session: str, path: Path, data: bytes, seen: witness.Seen | None, start: Tip = START
) -> Checked:
    """Every whole line of ``data`` (the journal at ``path`` from ``start`` on) against the
    chain and the witness ``seen`` (``CorruptJournal`` naming the first line that differs)."""
    if start.lines and (seen is None or seen.count < start.lines):
        raise CorruptJournal(
            f"{path}: reading from line {start.lines + 1}: the witness does not reach it",
            session,
            start.lines,
            0,
            "line",
        )
    lines = data.split(b"\n")[:-1]  # the piece after the last newline is torn or empty
    out: list[Record] = []
    links: list[str] = []
    head = start.link
    whole = start.offset
    for number, line in enumerate(lines, start.lines + 1):
        batch, stored, raw = batch_of(line)
        altered = False
        if batch is not None:
            head = witness.link(head, raw)
            altered = stored is not None and stored != head
        if batch is None or altered:
            if number == start.lines + len(lines) and not altered:
                break  # a torn last line: that append never completed (or see the witness)
            if start.lines:  # the lines before ``start`` were not read: a full read says
                raise CorruptJournal(
                    f"{path}: reading from line {start.lines + 1}: line {number} does not "
                    "continue the chain",
                    session,
                    number - 1,
                    0,
                    "line",
                )
            raise CorruptJournal(
                f"{path}: line {number} is not what was written (not a whole batch, or "
                f"its hash chain differs); the {number - 1} lines before it are whole",
                session,
                number - 1,
                number - 1,
                "line",
            )
        out.extend(batch)
        links.append(head)
        whole += len(line) + 1
    if start.lines:
        # The chain from the link before ``start`` must reach the witness's link.
        reached = [start.link, *links]
        at = seen.count - start.lines if seen is not None else 0
        if at >= len(reached) or reached[at] != (seen.link if seen is not None else ""):
            raise CorruptJournal(
                f"{path}: reading from line {start.lines + 1}: the chain does not reach the "
                "witness's link",
                session,
                start.lines,
                0,
                "line",
            )
    else:
        witness.verify(session, str(path), links, seen, "line")
    return Checked(start, out, links, whole)


def read(path: Path, offset: int = 0) -> bytes:
    """The journal's bytes from ``offset`` on (none when it does not exist yet); a link there
    is refused."""
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return b""
    with os.fdopen(fd, "rb") as handle:
        if offset:
            handle.seek(offset)
        return handle.read()


def size(path: Path) -> int:
    """The journal's bytes (0 when it does not exist yet); a link there is refused, never
    measured (its own size would read as another process's append)."""
    try:
        found = path.lstat()
    except FileNotFoundError:
        return 0
    if stat.S_ISLNK(found.st_mode):
        raise LinkRefused(path)
    return found.st_size


def cut_to(path: Path, whole: int) -> None:
    """Truncate what follows the ``whole`` bytes of verified lines (a torn last line)."""
    try:
        fd = open_file(path, os.O_RDWR)
    except FileNotFoundError:
        return
    try:
        if os.fstat(fd).st_size > whole:
            os.ftruncate(fd, whole)
    finally:
        os.close(fd)


__all__ = ["START", "Checked", "Tip", "batch_of", "check", "cut_to", "read", "size"]
