"""FileStore's journal lines: parsing one, checking all of them, cutting a torn tail.

The format is ``files/store.py``'s: one line per append, ``{"batch": [records...],"link": H}\\n``,
``H`` the chain link after the batch (``witness.py``); a line written before links has none.
``check`` reads every whole line, recomputes the chain and compares it with each stored link
and with the witness read *before* the journal (so the journal holds at least what the
witness counts, also while another process appends): a line that is not what was written is
``CorruptJournal`` naming it; a torn last line (an append that never completed, or one in
progress) is not a line yet and is left out.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

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


class Checked:
    """A journal as read and checked: its records, the chain's link after each line, and the
    bytes its whole lines take."""

    def __init__(self, records: list[Record], links: list[str], size: int) -> None:
        self.records = records
        self.links = links
        self.size = size

    @property
    def head(self) -> tuple[int, str]:
        return len(self.links), self.links[-1] if self.links else witness.ROOT


def check(session: str, path: Path, data: bytes, seen: witness.Seen | None) -> Checked:
    """Every whole line of ``data`` (the journal at ``path``) against the chain and the
    witness ``seen`` (``CorruptJournal`` naming the first line that differs)."""
    lines = data.split(b"\n")[:-1]  # the piece after the last newline is torn or empty
    out: list[Record] = []
    links: list[str] = []
    head = witness.ROOT
    whole = 0
    for number, line in enumerate(lines, 1):
        batch, stored, raw = batch_of(line)
        altered = False
        if batch is not None:
            head = witness.link(head, raw)
            altered = stored is not None and stored != head
        if batch is None or altered:
            if number == len(lines) and not altered:
                break  # a torn last line: that append never completed (or see the witness)
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
    witness.verify(session, str(path), links, seen, "line")
    return Checked(out, links, whole)


def read(path: Path) -> bytes:
    """The journal's bytes (none when it does not exist yet); a link there is refused."""
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return b""
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def size(path: Path) -> int:
    try:
        return path.lstat().st_size
    except FileNotFoundError:
        return 0


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


__all__ = ["Checked", "batch_of", "check", "cut_to", "read", "size"]
