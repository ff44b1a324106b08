"""The files of ``PostgresStore``: kept in the database, exported to this worker's root.

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

from ..codec import ISSUABLE, append_rel, blob_rel, encode, sha256
from ..disk import _same_bytes, append_bytes, atomic_write
from .base import PgConnection

_INSERT_BLOB = "INSERT INTO blobs (hash, size, body) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"
_INSERT_FILE = (
    "INSERT INTO files (path, kind, hash, size) VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING"
)


class PgFiles(PgConnection):
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
            if ISSUABLE.fullmatch(tail) and self._a_root(root):
                return tail
        return None

    def _a_root(self, root: str) -> bool:
        if root in self._roots:
            return True
        with self._connection() as conn:
            found = conn.execute("SELECT 1 FROM roots WHERE root = %s", (root,)).fetchone()
        if found:
            with self._lock:
                self._roots.add(root)
        return found is not None

    def _remember(self, rel: str, kind: str, data: bytes | None) -> None:
        if rel in self._known_paths or (data is None and self._known(rel)):
            return
        if data is None:
            # The seed reuses a file that was there already: keep a copy of what it holds.
            data = (self.root_path / rel).read_bytes()
        digest = sha256(data)
        with self._batch() as conn:  # one round trip
            conn.execute(_INSERT_BLOB, (digest, len(data), data))
            conn.execute(_INSERT_FILE, (rel, kind, digest, len(data)))
        with self._lock:
            self._known_paths.add(rel)

    def save_pack(self, pieces: list[str]) -> str:
        """The joined text as one exported file; in the database, its pieces by hash."""
        parts = [encode(piece) for piece in pieces]
        data = b"".join(parts)
        rel = blob_rel(sha256(data))
        if rel not in self._known_paths:
            # Written whether or not another worker wrote it already (asking first would cost
            # a round trip more): the blobs and the file are kept once, and the file's chunks
            # are added by the statement that added the file, never twice.
            digests = [sha256(part) for part in parts]
            blobs = sorted({d: part for d, part in zip(digests, parts, strict=True)}.items())
            with self._batch() as conn:  # one round trip
                cursor = conn.cursor()
                cursor.executemany(_INSERT_BLOB, [(d, len(part), part) for d, part in blobs])
                cursor.execute(
                    f"WITH added AS ({_INSERT_FILE} RETURNING path) "
                    "INSERT INTO file_chunks (path, seq, hash) SELECT added.path, chunk.seq, "
                    "chunk.hash FROM added, unnest(%s::bigint[], %s::text[]) AS chunk(seq, hash)",
                    (rel, "pack", None, len(data), list(range(len(digests))), digests),
                )
            with self._lock:
                self._known_paths.add(rel)
        path = self.root_path / rel
        if not _same_bytes(path, data):
            atomic_write(path, data, self.durable)
        return str(path)

    def _known(self, rel: str) -> bool:
        if rel in self._known_paths:
            return True
        with self._connection() as conn:
            row = conn.execute("SELECT kind FROM files WHERE path = %s", (rel,)).fetchone()
        if row is not None:
            with self._lock:
                self._known_paths.add(rel)
                if row[0] == "append":
                    self._appended.add(rel)
        return row is not None

    def read_bytes(self, path: str) -> bytes:
        rel = self.relative(path)
        if rel is None or not self._known(rel) or rel not in self._appended:
            return super().read_bytes(path)
        data = self._recover(rel) or b""
        local = self.root_path / rel
        if not _same_bytes(local, data):
            atomic_write(local, data, self.durable)
        return data

    def _recover(self, rel: str) -> bytes | None:
        with self._connection() as conn, conn.transaction():
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

    def append_file(self, name: str, text: str) -> str:
        rel = append_rel(name)
        data = encode(text)
        digest = sha256(data)
        with self._batch() as conn:  # one round trip
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
        before = grown.fetchone()[0]
        with self._lock:
            self._known_paths.add(rel)
            self._appended.add(rel)
        path = self.root_path / rel
        try:
            exported = path.stat().st_size
        except FileNotFoundError:
            exported = -1
        if exported == before:
            append_bytes(path, data, self.durable)
        else:
            # The local copy fell behind the database (another worker appended, or a crash).
            atomic_write(path, self._recover(rel) or b"", self.durable)
        return str(path)

    def check_files(self) -> list[str]:
        """``doctor``'s check of the database's half: every text hashes to its name (read a
        batch at a time), and every pack's or appended file's chunks add up to its size.
        What is wrong, at most ten lines (empty: all is well)."""
        found: list[str] = []
        with self._connection() as conn, conn.transaction():
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


__all__ = ["PgFiles"]
