"""FileStore's leases: one writer per session, held as an ``flock`` on ``<id>.lock``.

The first append of a store to a session takes an exclusive ``flock`` on the session's lock
file (``LockFiles.take``) and keeps its descriptor open until ``close``: the kernel releases
the lock when the descriptor closes or the process dies, SIGKILL included. The holder writes
its pid and host into the file, for the error another process gets (``SessionLocked``
naming them) and for ``writer``. The lease is the process's (``store/lease.py``): another
store object of the same process finds its own pid there and goes on without a lease of its
own. Where ``fcntl`` does not exist (Windows) no lease is taken; the store's check of the
journal's length alone guards it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..codec import dumps
from ..lease import Owner, SessionLocked, locked_message, same_process, this_process
from ..nofollow import open_file


class LockFiles:
    """The flocked lock files a store holds, by session."""

    def __init__(self, file_mode: int) -> None:
        self.file_mode = file_mode
        self._held: dict[str, int] = {}  # session -> fd of its flocked lock file

    def __contains__(self, session: str) -> bool:
        return session in self._held

    def take(self, session: str, path: Path, where: str) -> None:
        """Lock ``path`` for ``session`` (``SessionLocked`` if another live process holds
        it; ``where`` names the store in that error)."""
        try:
            import fcntl
        except ImportError:  # no flock here: the length check alone guards the journal
            return
        fd = open_file(path, os.O_RDWR | os.O_CREAT, self.file_mode)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = owner_of(fd)
                if owner is not None and same_process(owner):
                    os.close(fd)  # another store object of this process holds it
                    return
                raise SessionLocked(
                    locked_message(session, owner or Owner(0, "?", ""), where)
                ) from None
            me = this_process()
            os.ftruncate(fd, 0)
            os.pwrite(fd, dumps(me.as_dict()).encode("ascii"), 0)
        except BaseException:
            os.close(fd)
            raise
        self._held[session] = fd

    def release(self, session: str) -> None:
        """Drop the session's lock, if this store holds it."""
        fd = self._held.pop(session, None)
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        for fd in self._held.values():
            os.close(fd)  # releases the flock
        self._held.clear()


def writer(path: Path) -> Owner | None:
    """The live process holding the lock file at ``path``, if any."""
    try:
        import fcntl
    except ImportError:
        return None
    try:
        fd = open_file(path, os.O_RDWR)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return owner_of(fd) or Owner(0, "?", "")
        return None
    finally:
        os.close(fd)  # closing drops a lock taken just now


def owner_of(fd: int) -> Owner | None:
    """The owner a lock file's holder wrote into it (None: none readable)."""
    try:
        return Owner.from_dict(json.loads(os.pread(fd, 4096, 0) or b"null"))
    except (ValueError, TypeError, AttributeError):
        return None


__all__ = ["LockFiles", "owner_of", "writer"]
