"""FileStore's marks: where each checkpoint record of a session's journal is, in a side file.

``<id>.marks`` holds one line per checkpoint record, ``AT OFFSET LINES RECORDS LINK\\n``: the
checkpoint's position in the journal, then the ``Tip`` of the journal line that holds it (its
byte offset, the lines and records before it, the chain's link after the line before it;
``-`` for the empty link of the first line). A resume reads the journal from there
(``journal.check`` with that tip) instead of from its first line.

Invariants: a mark is a hint, written after its line and its witness, never fsynced: one lost
(a crash, a full disk) only makes a resume start from an older checkpoint or the first line,
and one that is wrong (a torn or altered marks file) does not pass the chain check from its
tip to the witness, or does not point at a checkpoint record, and is passed over the same way.
A line that does not parse is skipped, never glued to the next.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ..disk import append_bytes
from ..nofollow import open_file
from .journal import Tip


def line(at: int, tip: Tip) -> bytes:
    link = tip.link or "-"
    return f"{at} {tip.offset} {tip.lines} {tip.records} {link}\n".encode("ascii")


def add(path: Path, marks: list[tuple[int, Tip]], mode: int) -> None:
    """Append ``marks`` (after their line and witness were written): a mark that cannot be
    written only costs a longer resume, so it never fails the append."""
    if marks:
        with contextlib.suppress(OSError):
            append_bytes(path, b"".join(line(at, tip) for at, tip in marks), False, mode, True)


def read(path: Path) -> dict[int, Tip]:
    """The marks at ``path`` by checkpoint position (none when there is no such file)."""
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return {}
    with os.fdopen(fd, "rb") as handle:
        data = handle.read()
    found: dict[int, Tip] = {}
    for raw in data.split(b"\n")[:-1]:
        parts = raw.split(b" ")
        if len(parts) != 5 or not all(p.isdigit() for p in parts[:4]):
            continue
        at, offset, lines, records = (int(p) for p in parts[:4])
        link = parts[4].decode("ascii", "replace")
        if records > at or offset < 0:
            continue
        found[at] = Tip(offset, lines, "" if link == "-" else link, records)
    return found


__all__ = ["add", "read"]
