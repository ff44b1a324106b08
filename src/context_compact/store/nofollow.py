"""Opening a store's own files without following a symbolic link someone planted there.

A store never makes a symbolic link under its root. One found where the store keeps its
files (a journal, a meta file, the ledger, a database or its ``-wal``, a folder on the way)
was planted, and following it would read another project's session as this one, or write
into it. So every open of a store file here is by handle, with ``O_NOFOLLOW`` on the last
component, after checking that no folder between the root and the file is a link
(``under``); a link is ``LinkRefused``, one line naming the path. A file is then read and
written through the handle it was opened with, never opened again by name.

SQLite opens its files by name itself; ``sqlite_files_plain`` checks the database and the
files SQLite makes beside it (``-wal``, ``-journal``, ``-shm``) before a connection opens
them.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from ..errors import LinkRefused

SQLITE_SUFFIXES = ("", "-wal", "-journal", "-shm")


def refused(error: OSError, path: Path | str) -> OSError:
    """``LinkRefused`` for the ``ELOOP`` an ``O_NOFOLLOW`` open gives on a link, else
    ``error`` as it is."""
    if error.errno != errno.ELOOP:
        return error
    return LinkRefused(path)


def open_file(path: Path | str, flags: int, mode: int = 0o600) -> int:
    """``os.open(path, flags | O_NOFOLLOW)``; a link there is ``LinkRefused``."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW, mode)
    except OSError as error:
        raise refused(error, path) from None


def read_file(path: Path | str) -> bytes:
    """The bytes of ``path``; a symbolic link there is ``LinkRefused``."""
    fd = open_file(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def not_a_link(path: Path | str) -> None:
    """``LinkRefused`` when ``path`` is a symbolic link (a missing path is fine)."""
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        if os.path.islink(path):
            raise LinkRefused(path)


def under(root: str, path: Path | str) -> None:
    """``LinkRefused`` when a folder between ``root`` (already resolved) and ``path`` is a
    symbolic link; ``path`` outside ``root`` is not checked (the caller chose it)."""
    full = os.path.abspath(path)
    base = os.path.abspath(root)
    if not full.startswith(base.rstrip(os.sep) + os.sep):
        return
    parts = Path(full[len(base.rstrip(os.sep)) + 1 :]).parts[:-1]
    at = base
    for part in parts:
        at = os.path.join(at, part)
        if os.path.islink(at):
            raise LinkRefused(at, "a folder that is a symbolic link")


def sqlite_files_plain(db: Path | str, root: str | None = None) -> None:
    """``LinkRefused`` when the database ``db``, a file SQLite makes beside it, or a folder
    between ``root`` and it is a symbolic link."""
    if root is not None:
        under(root, db)
    for suffix in SQLITE_SUFFIXES:
        not_a_link(f"{db}{suffix}")


__all__ = [
    "SQLITE_SUFFIXES",
    "not_a_link",
    "open_file",
    "read_file",
    "refused",
    "sqlite_files_plain",
    "under",
]
