"""Files on disk as a store writes them: atomically, never through a link, under one root.

* ``atomic_write``: a whole file goes to a temporary file renamed into place, so a reader
  never sees half a copy and a crash never leaves a truncated one.
* ``append_bytes``: one ``write`` (O_APPEND: also across processes) at the end of a file.
* ``Root``: the folder a store's files live under; ``inside`` refuses a path through a
  folder that is a symbolic link (``LinkRefused``), since the store made none.
* ``durable``: every write (and the directory entry of a new file) fsynced before the call
  returns; the modes are the owner's only (``private``) or any program's, less the umask.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Sequence
from pathlib import Path

from ..errors import LinkRefused
from .codec import issuable
from .nofollow import open_file, read_file


def binary_file(path: str) -> ValueError:
    return ValueError(f"{path} is a binary media file, not text: use read_bytes")


# -- writing ------------------------------------------------------------------------------------
def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes | Sequence[bytes]) -> None:
    """All of ``data`` (bytes, or pieces written as one ``writev``: a long journal line is
    not copied whole just to add its frame)."""
    if isinstance(data, bytes):
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        return
    pieces = [memoryview(piece) for piece in data if piece]
    while pieces:
        done = os.writev(fd, pieces)
        while pieces and done >= len(pieces[0]):
            done -= len(pieces[0])
            pieces.pop(0)
        if pieces and done:
            pieces[0] = pieces[0][done:]


PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700
SHARED_FILE = 0o666  # less the umask, as any program's files
SHARED_DIR = 0o777


def folder_mode(mode: int) -> int:
    return PRIVATE_DIR if mode == PRIVATE_FILE else SHARED_DIR


def make_dirs(path: Path, mode: int = PRIVATE_DIR) -> None:
    """``path`` and its missing parents, each made with ``mode`` (``mkdir(parents=True)``
    gives the parents the umask's mode)."""
    missing = []
    while not path.exists():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=mode)


def atomic_write(path: Path, data: bytes, durable: bool = False, mode: int = PRIVATE_FILE) -> None:
    """``path`` holds ``data`` afterwards, or (on any failure) what it held before. A symbolic
    link at ``path`` is replaced, never followed."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    fd = _open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        try:
            write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)


def _open(path: Path, flags: int, mode: int = PRIVATE_FILE) -> int:
    """``os.open`` (never through a symbolic link: ``LinkRefused``), making the folder first
    if it is missing."""
    try:
        return open_file(path, flags, mode)
    except FileNotFoundError:
        make_dirs(path.parent, folder_mode(mode))
        return open_file(path, flags, mode)


def append_bytes(
    path: Path,
    data: bytes | Sequence[bytes],
    durable: bool = False,
    mode: int = PRIVATE_FILE,
    lines: bool = False,
) -> None:
    """Add ``data`` at the end of ``path`` with one ``write`` or ``writev`` (O_APPEND: also
    across processes); a symbolic link at ``path`` is refused (``LinkRefused``), never
    followed. ``lines``: ``data`` starts a line, so after a last line cut short (a write
    that failed half-way, a full disk) a newline goes first: never glued to the torn one."""
    flags = (os.O_RDWR if lines else os.O_WRONLY) | os.O_APPEND | os.O_CREAT
    created = durable and not os.path.lexists(path)
    fd = _open(path, flags, mode)
    try:
        end = os.fstat(fd).st_size if lines else 0
        if end and os.pread(fd, 1, end - 1) != b"\n":
            data = b"\n" + data if isinstance(data, bytes) else [b"\n", *data]
        write_all(fd, data)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        fsync_dir(path.parent)  # the new file's directory entry, or the file is not durable


def same_bytes(path: Path, data: bytes) -> bool:
    """Whether ``path`` is a plain file holding exactly ``data``."""
    try:
        if path.lstat().st_size != len(data) or path.is_symlink():
            return False
        return read_file(path) == data
    except FileNotFoundError:
        return False


class Root:
    """The folder a store's files live under: where a relative path is, whether writes are
    fsynced (``durable``) and the mode new files get (``private``: the owner's only)."""

    def __init__(
        self, root: str | os.PathLike[str], durable: bool = False, private: bool = True
    ) -> None:
        self.path = Path(root)
        self.name = str(self.path)
        self.durable = durable
        self.file_mode = PRIVATE_FILE if private else SHARED_FILE
        self.absolute = os.path.abspath(self.name)
        self._real = os.path.realpath(self.name)

    def inside(self, rel: str) -> Path:
        """``root / rel``, refused (``LinkRefused``) when a folder on the way is a symbolic
        link: the store made none, so one there was planted, and would lead outside root."""
        path = self.path / rel
        expected = os.path.normpath(os.path.join(self._real, os.path.dirname(rel)))
        if os.path.realpath(path.parent) != expected:
            raise LinkRefused(path, "a folder on the way that is a symbolic link")
        return path

    def relative(self, path: str) -> str | None:
        """``path`` relative to root (POSIX form) when it can be one we issued, else None."""
        if not isinstance(path, str):
            return None
        full = os.path.abspath(path)
        prefix = self.absolute.rstrip(os.sep) + os.sep
        if not full.startswith(prefix):
            return None
        rel = Path(full[len(prefix) :]).as_posix()
        return rel if issuable(rel) else None


__all__ = [
    "PRIVATE_DIR",
    "PRIVATE_FILE",
    "SHARED_DIR",
    "SHARED_FILE",
    "Root",
    "append_bytes",
    "atomic_write",
    "binary_file",
    "folder_mode",
    "fsync_dir",
    "make_dirs",
    "same_bytes",
    "write_all",
]
