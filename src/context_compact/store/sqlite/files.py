"""SqliteStore's ledger: the files the view names, recorded in the database, batched per turn.

``SqliteLedger`` is the ``archive.Ledger`` of the store's ``DiskArchive``: every path the
store issues has a row in ``files`` (and its text in ``blobs``; a pack, the hashes of its
pieces in ``files.pieces``; an appended file, its pieces in ``file_chunks``) so it can be
re-exported when the file is deleted; the file under root is written by the archive before
the path is returned.

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

from ..codec import sha256
from ..disk import Root
from . import blobs as sqlite_blobs
from .database import Database


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


class SqliteLedger:
    """The ``files`` rows of a ``SqliteStore`` (see above); ``turn`` batches them."""

    def __init__(self, db: Database, root: Root, compress: bool = True) -> None:
        self.db = db
        self.folder = root
        self.compress = compress  # texts stored zlib-compressed (sqlite/blobs.py)
        self.known_paths: set[str] = set()
        self.pending: list[FileRow] = []  # file rows kept for the turn's commit
        self._turns = threading.local()  # .depth: the turn() blocks this thread is inside

    @property
    def read_only(self) -> str | None:
        return self.db.read_only

    # -- batching ---------------------------------------------------------------------------
    @contextmanager
    def turn(self) -> Iterator[None]:
        """Batch the file rows of the calls inside with the next ``append`` (see above)."""
        self._turns.depth = self._depth() + 1
        try:
            yield
        finally:
            self._turns.depth -= 1
            if not self._turns.depth and self.pending:
                # No append took them (the turn failed, or wrote no record): commit them now,
                # or leave them for the next transaction if even that fails.
                try:
                    with self.db.lock:
                        with self.db.transaction():
                            self.apply_pending()
                        self.pending.clear()
                except (sqlite3.Error, OSError):
                    pass

    def _depth(self) -> int:
        return int(getattr(self._turns, "depth", 0))

    def apply_pending(self) -> None:
        """Inside the caller's transaction and lock: write the rows kept for it."""
        for pending in self.pending:
            pending.apply(self.db.connection, self.compress)

    def _record(self, row: FileRow) -> None:
        """Keep ``row`` for the turn's commit, or (outside a turn) commit it now."""
        if self._depth():
            self.db.refuse_writes()  # a read-only store refuses now, before the file is written
            with self.db.lock:
                self.pending.append(row)
            self.known_paths.add(row.rel)
            return
        with self.db.lock:
            with self.db.transaction():
                self.apply_pending()
                row.apply(self.db.connection, self.compress)
            self.pending.clear()
        self.known_paths.add(row.rel)

    # -- archive.Ledger ----------------------------------------------------------------------
    def remember(self, rel: str, kind: str, data: bytes | None) -> None:
        with self.db.mapped:
            if rel in self.known_paths or (data is None and self.known(rel)):
                return
            if data is None:
                # The seed reuses a file that was there already: keep a copy of what it holds.
                data = (self.folder.path / rel).read_bytes()
            digest = sha256(data)
            self._record(FileRow(rel, kind, digest, len(data), [(digest, data)]))

    def remember_pack(self, rel: str, parts: list[bytes], data: bytes) -> None:
        """In the database, the list of the pack's pieces by hash: a result the log already
        holds as a blob costs nothing more."""
        with self.db.mapped:
            if rel not in self.known_paths and not self.known(rel):
                digests = [sha256(part) for part in parts]
                blobs = list(zip(digests, parts, strict=True))
                self._record(FileRow(rel, "pack", None, len(data), blobs, digests))

    def remember_append(self, rel: str, data: bytes) -> int | None:
        digest = sha256(data)
        with self.db.mapped:
            with self.db.lock:
                found = self.db.connection.execute(
                    "SELECT size FROM files WHERE path = ?", (rel,)
                ).fetchone()
                before = (found[0] if found else 0) + sum(
                    row.size for row in self.pending if row.rel == rel
                )
            self._record(FileRow(rel, "append", digest, len(data), [(digest, data)], append=True))
        return int(before)

    def known(self, rel: str) -> bool:
        if rel in self.known_paths:
            return True
        with self.db.mapped, self.db.lock:
            row = self.db.connection.execute(
                "SELECT 1 FROM files WHERE path = ?", (rel,)
            ).fetchone()
        if row is not None:
            self.known_paths.add(rel)
        return row is not None

    def recover(self, rel: str) -> bytes | None:
        with self.db.mapped, self.db.lock:
            stored = sqlite_blobs.file_bytes(self.db.connection, rel)
            pending = [row for row in self.pending if row.rel == rel]
        if not pending:
            return stored
        if not pending[0].append:
            return pending[0].data()
        return (stored or b"") + b"".join(row.data() for row in pending)


__all__ = ["FileRow", "SqliteLedger"]
