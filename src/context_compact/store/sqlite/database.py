"""SqliteStore's database: one SQLite file, one connection its parts share, errors mapped.

* One connection, shared by threads under ``lock`` (every use holds it); ``close`` releases it.
* Opened for writing (WAL, migrated: ``schema.py``) unless asked to read only or the file
  cannot be written here: then read only (``read_only`` says why), and every write is
  ``ReadOnlyStore`` before it starts (``refuse_writes``, ``transaction``).
* No symbolic link is followed: the database, its ``-wal``/``-journal``/``-shm`` and a folder
  between root and it are checked before SQLite opens them (``nofollow.py``).
* ``mapped``: the block every method of the store's parts that reaches SQLite runs in
  (``boundary.map_errors``): no ``sqlite3.Error`` leaves it, each is ``StoreRefused`` or
  ``CorruptStore`` naming the file (``refusals.py``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import threading
from pathlib import Path

from ...errors import CorruptStore, ReadOnlyStore
from ..boundary import map_errors
from ..disk import Root, folder_mode, make_dirs
from ..nofollow import sqlite_files_plain
from .refusals import translate
from .schema import connect, connect_read_only
from .tx import Transaction, unusable


class Database:
    """The connection to the database file ``path`` of a store on ``root`` (see above)."""

    def __init__(self, path: Path, root: Root, read_only: bool = False) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.mapped = map_errors(lambda error: translate(error, path))
        # Why writes are refused (None: they are not): asked for, or the file cannot be written.
        self.read_only: str | None = "opened with read_only=True" if read_only else None
        with self.mapped:
            # SQLite opens its files by name, following links: none may be there (nofollow.py).
            sqlite_files_plain(path, root.absolute)
            if self.read_only is None:
                try:
                    self.connection = self._open_writable(root)
                except sqlite3.OperationalError as error:
                    if not path.is_file():
                        raise
                    self.read_only = f"it cannot be written here ({error})"
            if self.read_only is not None:
                try:
                    self.connection = connect_read_only(str(path))
                except sqlite3.DatabaseError as error:
                    if isinstance(error, sqlite3.OperationalError):
                        raise
                    raise CorruptStore(unusable(path, error)) from error

    def _open_writable(self, root: Root) -> sqlite3.Connection:
        make_dirs(self.path.parent, folder_mode(root.file_mode))
        if not self.path.exists():
            # Made here with the store's mode: SQLite gives its -wal and -shm files the same.
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            with contextlib.suppress(FileExistsError):
                os.close(os.open(self.path, flags, root.file_mode))
        try:
            db = connect(str(self.path), root.durable)
            # WAL checkpoints run on a background connection, not inside the caller's append
            # (measured: an automatic checkpoint every ~90 turns took 10-20 ms of one prepare).
            db.execute("PRAGMA wal_autocheckpoint = 0")
            # ...and the WAL file is cut back to 4 MiB when it restarts after a checkpoint.
            db.execute(f"PRAGMA journal_size_limit = {4 << 20}")
        except sqlite3.DatabaseError as error:
            if isinstance(error, sqlite3.OperationalError):
                raise  # locked, read-only, no such folder: not damage
            raise CorruptStore(unusable(self.path, error)) from error
        return db

    def refuse_writes(self) -> None:
        if self.read_only is not None:
            raise ReadOnlyStore(
                errno.EROFS,
                f"{self.path} is open for reading only: {self.read_only}; writes are refused",
            )

    def transaction(self) -> Transaction:
        """A write transaction (``tx.Transaction``), refused first on a read-only database."""
        self.refuse_writes()
        return Transaction(self.connection)

    def close(self) -> None:
        with self.mapped, self.lock:
            self.connection.close()


__all__ = ["Database"]
