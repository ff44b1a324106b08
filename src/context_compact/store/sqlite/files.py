"""SqliteStore's file half: the files the view names, recorded in the database, batched per turn.

Every path the store issues has a row in ``files`` (and its text in ``blobs``; a pack, the
hashes of its pieces in ``files.pieces``; an appended file, its pieces in ``file_chunks``) so
it can be re-exported when the file is deleted; the file under root is written by
``DiskFiles`` before the path is returned.

Batching (``turn``). Outside a turn each call records its file in its own transaction, as
before the file is exported. Inside ``with store.turn():`` the rows are kept in memory
(``_pending``) and written in the same transaction as the turn's journal ``append``, so a
turn that persists results, packs a clearing and archives a summary commits once: one set of
b-tree pages in the WAL instead of one per call. No write lock is held across the turn (a
summary may wait seconds on a model), only for that one commit.

Invariants:

* A file's rows are committed no later than the first journal append after it was issued, in
  the same transaction: a committed record never names a path the database does not know.
  Rows whose commit failed stay pending, in order, and go with the next transaction.
* ``issued``, ``read_text`` and re-export see pending rows too (this process issued them);
  another process sees them once committed, which is before any record naming them is.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..codec import append_rel, blob_rel, sha256
from ..codec import encode as encode
from ..disk import DiskFiles, _same_bytes, append_bytes, atomic_write
from . import blobs as sqlite_blobs


@dataclass
class FileRow:
    """The rows one issued file (or one append to a file) adds: applied by ``apply``."""

    rel: str
    kind: str
    digest: str | None
    size: int
    blobs: list[tuple[str, bytes]] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)
    append: bool = False

    def apply(self, db: sqlite3.Connection, compress: bool = True) -> None:
        if self.append:
            # The piece itself goes in its chunk row: an appended line is seldom a text stored
            # already, and a ``blobs`` row would cost a page write at a random place more.
            body, codec = sqlite_blobs.pack(self.data(), compress)
            db.execute(
                "INSERT OR IGNORE INTO files (path, kind, hash, size) VALUES (?, ?, NULL, 0)",
                (self.rel, self.kind),
            )
            db.execute(
                "INSERT INTO file_chunks (path, seq, body, codec) VALUES (:p, (SELECT "
                "coalesce(max(seq) + 1, 0) FROM file_chunks WHERE path = :p), :b, :c)",
                {"p": self.rel, "b": body, "c": codec},
            )
            db.execute("UPDATE files SET size = size + ? WHERE path = ?", (self.size, self.rel))
            return
        sqlite_blobs.insert(db, self.blobs, compress)
        db.execute(
            "INSERT OR IGNORE INTO files (path, kind, hash, size, pieces) VALUES (?, ?, ?, ?, ?)",
            (self.rel, self.kind, self.digest, self.size, "".join(self.chunks) or None),
        )

    def data(self) -> bytes:
        """The bytes this row adds to its file."""
        if self.chunks:
            parts = dict(self.blobs)
            return b"".join(parts[d] for d in self.chunks)
        return self.blobs[0][1] if self.blobs else b""


class SqliteFiles(DiskFiles):
    """The file half of ``SqliteStore`` (which provides ``_db``, ``_lock``, ``_transaction``)."""

    _db: sqlite3.Connection
    _lock: threading.Lock
    _known_paths: set[str]
    _pending: list[FileRow]
    _turns: threading.local  # .depth: the turn() blocks this thread is inside
    compress: bool  # texts stored zlib-compressed (sqlite/blobs.py)

    def _transaction(self) -> Any:
        raise NotImplementedError

    def _refuse_writes(self) -> None:
        raise NotImplementedError

    # -- batching ---------------------------------------------------------------------------
    @contextmanager
    def turn(self) -> Iterator[None]:
        """Batch the file rows of the calls inside with the next ``append`` (see above)."""
        self._turns.depth = self._depth() + 1
        try:
            yield
        finally:
            self._turns.depth -= 1
            if not self._turns.depth and self._pending:
                # No append took them (the turn failed, or wrote no record): commit them now,
                # or leave them for the next transaction if even that fails.
                try:
                    with self._lock:
                        with self._transaction():
                            self._apply_pending()
                        self._pending.clear()
                except (sqlite3.Error, OSError):
                    pass

    def _depth(self) -> int:
        return int(getattr(self._turns, "depth", 0))

    def _apply_pending(self) -> None:
        """Inside the caller's transaction and lock: write the rows kept for it."""
        for pending in self._pending:
            pending.apply(self._db, self.compress)

    def _record(self, row: FileRow) -> None:
        """Keep ``row`` for the turn's commit, or (outside a turn) commit it now."""
        if self._depth():
            self._refuse_writes()  # a read-only store refuses now, before the file is written
            with self._lock:
                self._pending.append(row)
            self._known_paths.add(row.rel)
            return
        with self._lock:
            with self._transaction():
                self._apply_pending()
                row.apply(self._db, self.compress)
            self._pending.clear()
        self._known_paths.add(row.rel)

    # -- DiskFiles ---------------------------------------------------------------------------
    def _remember(self, rel: str, kind: str, data: bytes | None) -> None:
        if rel in self._known_paths or (data is None and self._known(rel)):
            return
        if data is None:
            # The seed reuses a file that was there already: keep a copy of what it holds.
            data = (self.root_path / rel).read_bytes()
        digest = sha256(data)
        self._record(FileRow(rel, kind, digest, len(data), [(digest, data)]))

    def save_pack(self, pieces: list[str]) -> str:
        """The joined text as one exported file; in the database, the list of its pieces by
        hash (a result the log already holds as a blob costs nothing more)."""
        parts = [encode(piece) for piece in pieces]
        data = b"".join(parts)
        rel = blob_rel(sha256(data))
        if rel not in self._known_paths and not self._known(rel):
            digests = [sha256(part) for part in parts]
            blobs = list(zip(digests, parts, strict=True))
            self._record(FileRow(rel, "pack", None, len(data), blobs, digests))
        path = self.inside(rel)
        if not _same_bytes(path, data):
            atomic_write(path, data, self.durable, self.file_mode)
        return str(path)

    def _known(self, rel: str) -> bool:
        if rel in self._known_paths:
            return True
        with self._lock:
            row = self._db.execute("SELECT 1 FROM files WHERE path = ?", (rel,)).fetchone()
        if row is not None:
            self._known_paths.add(rel)
        return row is not None

    def _recover(self, rel: str) -> bytes | None:
        with self._lock:
            stored = sqlite_blobs.file_bytes(self._db, rel)
            pending = [row for row in self._pending if row.rel == rel]
        if not pending:
            return stored
        if not pending[0].append:
            return pending[0].data()
        return (stored or b"") + b"".join(row.data() for row in pending)

    def append_file(self, name: str, text: str) -> str:
        rel = append_rel(name)
        data = encode(text)
        digest = sha256(data)
        with self._lock:
            found = self._db.execute("SELECT size FROM files WHERE path = ?", (rel,)).fetchone()
            before = (found[0] if found else 0) + sum(
                row.size for row in self._pending if row.rel == rel
            )
        self._record(FileRow(rel, "append", digest, len(data), [(digest, data)], append=True))
        path = self.inside(rel)
        try:
            exported = path.lstat().st_size
        except FileNotFoundError:
            exported = -1
        if exported == before:
            append_bytes(path, data, self.durable, self.file_mode)
        else:
            # The export fell behind the database (a crash between the two, or deleted).
            atomic_write(path, self._recover(rel) or b"", self.durable, self.file_mode)
        return str(path)
