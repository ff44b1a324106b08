"""The files of ``PostgresStore``: kept in the database, exported to this worker's root.

``PgLedger`` is the ``archive.Ledger`` of its archive, ``PgArchive``, a ``DiskArchive`` that
also reads the paths other workers issued and an appended file from the database.

Invariants:

* A file the view names is in the database (``files``, its text in ``blobs`` by sha256, an
  appended file or a pack as ``file_chunks`` in order) before it is exported, so any worker
  serves it: ``read_text`` of a path whose file is not on this machine reads the database
  and writes the local copy. The files under ``root`` are a cache.
* A path issued under another worker's root is recognized too (every root is recorded in
  ``roots``): ``issued``/``read_text`` take the part after the root.
* An appended file (a session's index) may grow on any worker: it is read from the database,
  and the local copy brought up to date; every other file is written once.
"""

from __future__ import annotations

import os

from ..archive import DiskArchive
from ..codec import ISSUABLE, sha256
from ..disk import Root, atomic_write, same_bytes
from .base import PgConnection

_INSERT_BLOB = "INSERT INTO blobs (hash, size, body) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"
_INSERT_FILE = (
    "INSERT INTO files (path, kind, hash, size) VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING"
)


class PgLedger:
    """The ``files`` rows of a ``PostgresStore`` on ``pg`` (see above)."""

    read_only: str | None = None

    def __init__(self, pg: PgConnection, root: Root) -> None:
        self.pg = pg
        self.folder = root
        self.known_paths: set[str] = set()
        self.appended: set[str] = set()  # of those, the files append_file grows
        self.roots: set[str] = {root.absolute}

    def a_root(self, root: str) -> bool:
        """Whether ``root`` is the root of a worker of this database."""
        if root in self.roots:
            return True
        with self.pg.mapped, self.pg.connection() as conn:
            found = conn.execute("SELECT 1 FROM roots WHERE root = %s", (root,)).fetchone()
        if found:
            with self.pg.lock:
                self.roots.add(root)
        return found is not None

    def remember(self, rel: str, kind: str, data: bytes | None) -> None:
        if rel in self.known_paths or (data is None and self.known(rel)):
            return
        if data is None:
            # The seed reuses a file that was there already: keep a copy of what it holds.
            data = (self.folder.path / rel).read_bytes()
        digest = sha256(data)
        with self.pg.mapped, self.pg.batch() as conn:  # one round trip
            conn.execute(_INSERT_BLOB, (digest, len(data), data))
            conn.execute(_INSERT_FILE, (rel, kind, digest, len(data)))
        with self.pg.lock:
            self.known_paths.add(rel)

    def remember_pack(self, rel: str, parts: list[bytes], data: bytes) -> None:
        """In the database, the pack's pieces by hash."""
        if rel in self.known_paths:
            return
        # Written whether or not another worker wrote it already (asking first would cost
        # a round trip more): the blobs and the file are kept once, and the file's chunks
        # are added by the statement that added the file, never twice.
        digests = [sha256(part) for part in parts]
        blobs = sorted({d: part for d, part in zip(digests, parts, strict=True)}.items())
        with self.pg.mapped, self.pg.batch() as conn:  # one round trip
            cursor = conn.cursor()
            cursor.executemany(_INSERT_BLOB, [(d, len(part), part) for d, part in blobs])
            cursor.execute(
                f"WITH added AS ({_INSERT_FILE} RETURNING path) "
                "INSERT INTO file_chunks (path, seq, hash) SELECT added.path, chunk.seq, "
                "chunk.hash FROM added, unnest(%s::bigint[], %s::text[]) AS chunk(seq, hash)",
                (rel, "pack", None, len(data), list(range(len(digests))), digests),
            )
        with self.pg.lock:
            self.known_paths.add(rel)

    def remember_append(self, rel: str, data: bytes) -> int | None:
        digest = sha256(data)
        with self.pg.mapped, self.pg.batch() as conn:  # one round trip
            conn.execute(_INSERT_BLOB, (digest, len(data), data))
            conn.execute(_INSERT_FILE, (rel, "append", None, 0))
            # The file's row locked first (two appends to one file are serialized), and its
            # size before this chunk read off the same statement.
            grown = conn.execute(
                "UPDATE files SET size = size + %(n)s WHERE path = %(p)s RETURNING size - %(n)s",
                {"p": rel, "n": len(data)},
            )
            conn.execute(
                "INSERT INTO file_chunks (path, seq, hash) SELECT %(p)s, "
                "coalesce(max(seq) + 1, 0), %(h)s FROM file_chunks WHERE path = %(p)s",
                {"p": rel, "h": digest},
            )
        with self.pg.mapped:
            before = int(grown.fetchone()[0])
        with self.pg.lock:
            self.known_paths.add(rel)
            self.appended.add(rel)
        return before

    def known(self, rel: str) -> bool:
        if rel in self.known_paths:
            return True
        with self.pg.mapped, self.pg.connection() as conn:
            row = conn.execute("SELECT kind FROM files WHERE path = %s", (rel,)).fetchone()
        if row is not None:
            with self.pg.lock:
                self.known_paths.add(rel)
                if row[0] == "append":
                    self.appended.add(rel)
        return row is not None

    def recover(self, rel: str) -> bytes | None:
        with self.pg.mapped, self.pg.connection() as conn, conn.transaction():
            row = conn.execute(
                "SELECT blobs.body FROM files JOIN blobs ON blobs.hash = files.hash "
                "WHERE files.path = %s",
                (rel,),
            ).fetchone()
            if row is not None:
                return bytes(row[0])
            chunks = conn.execute(
                "SELECT blobs.body FROM file_chunks JOIN blobs ON blobs.hash = file_chunks.hash "
                "WHERE file_chunks.path = %s ORDER BY file_chunks.seq",
                (rel,),
            ).fetchall()
        return b"".join(bytes(chunk[0]) for chunk in chunks) if chunks else None

    def check_files(self) -> list[str]:
        """``doctor``'s check of the database's half: every text hashes to its name (read a
        batch at a time), and every pack's or appended file's chunks add up to its size.
        What is wrong, at most ten lines (empty: all is well)."""
        found: list[str] = []
        with self.pg.mapped, self.pg.connection() as conn, conn.transaction():
            cursor = conn.cursor(name="cc_doctor_blobs")
            cursor.itersize = 256
            cursor.execute("SELECT hash, body FROM blobs")
            for digest, body in cursor:
                if sha256(bytes(body)) != digest:
                    found.append(f"blob {digest[:12]} was altered (its text hashes otherwise)")
                    if len(found) >= 10:
                        return found
            cursor.close()
            short = conn.execute(
                "SELECT f.path, f.size, coalesce(sum(b.size), 0) FROM files f "
                "JOIN file_chunks c ON c.path = f.path JOIN blobs b ON b.hash = c.hash "
                "WHERE f.hash IS NULL GROUP BY f.path, f.size "
                "HAVING coalesce(sum(b.size), 0) <> f.size ORDER BY f.path LIMIT 10"
            ).fetchall()
        for path, size, has in short:
            found.append(f"file {path}: {has:,} bytes in its chunks, {size:,} written")
        return found[:10]


class PgArchive(DiskArchive):
    """The archive of a ``PostgresStore``: a ``DiskArchive`` whose ledger is ``PgLedger``,
    that also takes another worker's paths and reads a growing file from the database."""

    def __init__(self, root: Root, ledger: PgLedger) -> None:
        super().__init__(root, ledger)
        self.rows = ledger

    def relative(self, path: str) -> str | None:
        """Also a path under the root of another worker of this database."""
        rel = super().relative(path)
        if rel is not None or not isinstance(path, str) or not os.path.isabs(path):
            return rel
        full = os.path.normpath(path)
        for marker in ("/.task_outputs/", "/.transcripts/"):
            at = full.find(marker)
            if at < 0:
                continue
            root, tail = full[:at], full[at + 1 :]
            if ISSUABLE.fullmatch(tail) and self.rows.a_root(root):
                return tail
        return None

    def read_bytes(self, path: str) -> bytes:
        """An appended file (it may grow on any worker) from the database, the local copy
        brought up to date; any other as ``DiskArchive`` reads it."""
        rel = self.relative(path)
        if rel is None or not self.rows.known(rel) or rel not in self.rows.appended:
            return super().read_bytes(path)
        data = self.rows.recover(rel) or b""
        local = self.folder.path / rel
        if not same_bytes(local, data):
            atomic_write(local, data, self.folder.durable)
        return data


__all__ = ["PgArchive", "PgLedger"]
