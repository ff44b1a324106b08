"""Journal integrity: a hash chain over what a store wrote, and a witness outside the journal.

Each durable store chains its journal: ``link(prev, data)`` hashes the previous link with the
bytes of one unit the store wrote (``FileStore``: one batch line; ``SqliteStore``: one
record's stored body), from ``ROOT``. Loading recomputes the chain.

A chain alone cannot see a journal that lost its tail: a ``FileStore`` journal cut in half,
or a SQLite WAL cut or bit-flipped (SQLite then silently drops the commits after the damage)
is a shorter journal whose chain is just as consistent. So after every append the store also
writes a *witness* of the session, in a small file beside the journal that the journal's
damage does not touch: the number of units written and the chain's link at that point.

``verify(session, links, witness)`` compares: fewer units than the witness counts means the
tail was cut or rolled back; another link at the witness's count means the journal was
altered. Either is ``CorruptJournal`` naming the session, the first unit that differs and how
many units before it are whole (recoverable): never a silent resume from an earlier point.
A witness behind the journal (a crash between the two writes) is normal: it is a lower bound.
A missing witness (a journal written before this version, or the file deleted) checks nothing
but the chain's own shape. A reader in another process reads the witness before it reads
the journal (``settled``), never after: a witness read after may count an append the
reader's snapshot does not hold, a write in progress that is not damage.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ..errors import CorruptJournal
from .disk import folder_mode, make_dirs
from .nofollow import open_file

T = TypeVar("T")
ROOT = ""
_WIDTH = 20 + 1 + 32 + 1  # "<count, 20 digits> <link, 32 hex>\n": one fixed-width write


def link(prev: str, data: bytes) -> str:
    digest = hashlib.blake2b(prev.encode("ascii"), digest_size=16)
    digest.update(b"\n")
    digest.update(data)
    return digest.hexdigest()


@dataclass(frozen=True)
class Seen:
    count: int
    link: str


def write(path: Path, count: int, head: str, durable: bool = False, mode: int = 0o600) -> None:
    """Record that ``count`` units were written, the last link ``head``. Called after the
    append succeeded, so it never fails it: a witness that cannot be written stays behind
    the journal, which only makes it check less."""
    with contextlib.suppress(OSError):
        _write(path, count, head, durable, mode)


def _write(path: Path, count: int, head: str, durable: bool, mode: int) -> None:
    data = f"{count:020d} {head:>32}\n".encode("ascii")
    try:
        fd = open_file(path, os.O_WRONLY | os.O_CREAT, mode)
    except FileNotFoundError:
        # Every missing folder with the mode (``mkdir(parents=True)`` would give the parents,
        # ``.context-compact`` and ``heads``, the umask's).
        make_dirs(path.parent, folder_mode(mode))
        fd = open_file(path, os.O_WRONLY | os.O_CREAT, mode)
    try:
        os.pwrite(fd, data, 0)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)


def read(path: Path) -> Seen | None:
    try:
        fd = open_file(path, os.O_RDONLY)  # a planted link: LinkRefused
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        data = os.pread(fd, _WIDTH, 0)
    finally:
        os.close(fd)
    parts = data.decode("ascii", "replace").split()
    if len(data) != _WIDTH or len(parts) not in (1, 2) or not parts[0].isdigit():
        return None  # torn or foreign: checks nothing
    return Seen(int(parts[0]), parts[1] if len(parts) == 2 else ROOT)


def verify(session: str, where: str, links: list[str], seen: Seen | None, unit: str) -> None:
    """``CorruptJournal`` unless ``links`` (the chain after each unit loaded) agrees with the
    witness ``seen``."""
    if seen is None or seen.count == 0:
        return
    if len(links) < seen.count:
        lost = seen.count - len(links)
        raise CorruptJournal(
            f"session {session!r} in {where}: the journal ends after {len(links)} {unit}s but "
            f"{seen.count} were written: its tail was cut or rolled back ({lost} {unit}s "
            "missing); nothing was resumed from the earlier point. `context-compact doctor` "
            "says what is whole",
            session,
            len(links),
            len(links),
            unit,
        )
    if links[seen.count - 1] != seen.link:
        raise CorruptJournal(
            f"session {session!r} in {where}: the journal was altered: its first "
            f"{seen.count} {unit}s are not what was written (hash chain differs); "
            "`context-compact doctor` says what is whole",
            session,
            seen.count - 1,
            0,
            unit,
        )


def settled(path: Path, load: Callable[[Seen | None], T], tries: int = 3) -> T:
    """``load(seen)`` with the witness at ``path`` read just before it: a reader in another
    process than the writer reads the witness *before* its snapshot of the journal, so the
    snapshot holds at least what the witness counts. A ``CorruptJournal`` while the witness
    changed meanwhile (a write landed during the read; a witness read while being rewritten)
    is read again, up to ``tries`` times; one that stays is reported."""
    for attempt in range(tries):
        seen = read(path)
        try:
            return load(seen)
        except CorruptJournal:
            if attempt == tries - 1 or read(path) == seen:
                raise
    raise AssertionError("unreachable")


__all__ = ["ROOT", "CorruptJournal", "Seen", "link", "read", "settled", "verify", "write"]
