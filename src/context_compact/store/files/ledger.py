"""FileStore's ledgers: append-only files of one entry a line, framed so a torn entry is found.

The ledger of issued paths (``.task_outputs/issued.txt``) is appended by every store on a
root, from any process, with O_APPEND. A write cut short (a full disk, a power loss) leaves
part of an entry at the end; unframed, the next entry would be glued to it and both lost (a
file the view names then refused as "not a path this store issued"). So each entry is

    \\n+<entry> <crc32 of entry, 8 hex digits>\\n

in one write: it starts a line of its own whatever precedes it, and a torn one (no checksum,
or one that does not match) is skipped, never read as an entry. The blank lines between
entries are nothing. A line without the leading ``+`` was written before the frames (one
whole path a line, as they were always written) and is read as it is when ``legacy`` accepts
it: existing ledgers read as before.

A reader reads whole lines only (``parse`` returns how many bytes it used): what follows the
last newline is an entry being written, read once it is whole.

``FileLedger`` is ``archive.Ledger`` over that file: it keeps no copy of a text (a file deleted
behind the store's back is gone), and the files on disk are all there is of an appended one.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable

from ..codec import issuable
from ..disk import Root, append_bytes
from ..nofollow import open_file

MARK = b"+"
LEDGER = ".task_outputs/issued.txt"


def frame(entry: str) -> bytes:
    """The bytes that append ``entry`` (ASCII, no newline or space) to a ledger."""
    data = entry.encode("ascii")
    return b"\n" + MARK + data + b" " + b"%08x" % zlib.crc32(data) + b"\n"


def parse(data: bytes, legacy: Callable[[str], bool]) -> tuple[list[str], int]:
    """The entries of the whole lines of ``data`` and how many bytes those lines take;
    a torn or glued line is skipped."""
    used = data.rfind(b"\n") + 1
    entries = []
    for line in data[:used].split(b"\n"):
        if not line:
            continue
        if line.startswith(MARK):
            body, _, check = line[1:].rpartition(b" ")
            if len(check) == 8 and check == b"%08x" % zlib.crc32(body):
                entries.append(body.decode("ascii"))
            continue
        text = line.decode("ascii", "replace")
        if legacy(text):
            entries.append(text)
    return entries, used


class FileLedger:
    """The issued paths of a ``FileStore`` root, in ``LEDGER`` (see above)."""

    read_only: str | None = None

    def __init__(self, root: Root) -> None:
        self.folder = root
        self._issued: set[str] = set()
        self._read = 0  # bytes of the ledger already in _issued

    def remember(self, rel: str, kind: str, data: bytes | None) -> None:
        if rel not in self._issued:
            path = self.folder.inside(LEDGER)
            append_bytes(path, frame(rel), self.folder.durable, self.folder.file_mode)
            self._issued.add(rel)

    def remember_pack(self, rel: str, parts: list[bytes], data: bytes) -> None:
        self.remember(rel, "blob", data)

    def remember_append(self, rel: str, data: bytes) -> int | None:
        self.remember(rel, "append", None)
        return None

    def known(self, rel: str) -> bool:
        if rel not in self._issued:
            self._catch_up()
        return rel in self._issued

    def recover(self, rel: str) -> bytes | None:
        return None

    def _catch_up(self) -> None:
        # Another store on this root (another process, an earlier run) may have issued it.
        try:
            fd = open_file(self.folder.inside(LEDGER), os.O_RDONLY)
        except FileNotFoundError:
            return
        with os.fdopen(fd, "rb") as ledger:
            ledger.seek(self._read)
            entries, used = parse(ledger.read(), issuable)
        self._issued.update(entries)
        self._read += used


__all__ = ["LEDGER", "MARK", "FileLedger", "frame", "parse"]
