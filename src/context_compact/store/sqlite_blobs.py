"""SqliteStore's texts: each stored once in ``blobs`` by the sha256 of its bytes, compressed.

A row is ``(hash, size, body, codec)``: ``hash`` and ``size`` are of the original bytes,
``body`` is those bytes as stored, and ``codec`` says how (``NULL``: as they are, the only
form before migration 0004; ``'zlib'``: ``zlib.compress`` at ``LEVEL``). A text is stored
compressed only when that saves at least ``MIN_SAVING`` of it, so incompressible data (an
image, random bytes) is not stored larger.

Why compress: every page SQLite writes goes to the WAL and again to the database at the
checkpoint, so a text costs twice its stored size in writes; the files the view names cost
once more. Tool output (source, logs, JSON) compresses 3-4x at level 1 (measured on the
bench's synthetic session: 3.6x; on the shared real logs: ``bench --store-io``), which is
what halves the store's writes (``bench --store-io`` measures both). It costs CPU in the
caller's append: zlib level 1 ran at 17-29 MB/s on this (loaded, 2-core) machine, 0.3-0.5 ms
for a turn's ~9 KB of results; ``SqliteStore(compress=False)`` stores texts as they are.

Invariant: ``unpack(*pack(data)) == data`` for all bytes, and a reader checks the sha256 of
what it unpacked, so a damaged row is found whatever the codec (``CorruptJournal``).
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterable

from .disk import sha256

LEVEL = 1  # the fastest level; higher ones gain ~10% more at 2-3x the CPU (measured here)
MIN_SAVING = 0.1
ZLIB = "zlib"
INSERT = "INSERT OR IGNORE INTO blobs (hash, size, body, codec) VALUES (?, ?, ?, ?)"
_MAX_VARIABLES = 500  # under SQLite's smallest default limit on ? per statement


def pack(data: bytes, compress: bool = True) -> tuple[bytes, str | None]:
    """The body and codec to store ``data`` with (``compress=False``: as it is)."""
    if compress and len(data) >= 256:
        packed = zlib.compress(data, LEVEL)
        if len(packed) <= len(data) * (1 - MIN_SAVING):
            return packed, ZLIB
    return data, None


def unpack(body: bytes, codec: str | None) -> bytes:
    if codec is None:
        return bytes(body)
    if codec == ZLIB:
        try:
            return zlib.decompress(body)
        except zlib.error:
            return b""  # damaged: the caller's hash check names it
    raise ValueError(f"blob codec {codec!r} is unknown to this version of context_compact")


def row(
    data: bytes, digest: str | None = None, compress: bool = True
) -> tuple[str, int, bytes, str | None]:
    """The ``blobs`` row that stores ``data`` (its digest given when already known)."""
    body, codec = pack(data, compress)
    return (digest or sha256(data), len(data), body, codec)


def insert(
    db: sqlite3.Connection, blobs: Iterable[tuple[str, bytes]], compress: bool = True
) -> None:
    """Store each ``(digest, data)`` not stored yet (inside the caller's transaction).

    The ones already there are looked up first, so a text the log holds already costs
    neither a compression nor a write."""
    pending = dict(blobs)
    if not pending:
        return
    present = set(fetch_present(db, pending))
    rows = [row(data, d, compress) for d, data in pending.items() if d not in present]
    db.executemany(INSERT, rows)


def fetch_present(db: sqlite3.Connection, hashes: Iterable[str]) -> list[str]:
    wanted = sorted(set(hashes))
    found: list[str] = []
    for at in range(0, len(wanted), _MAX_VARIABLES):
        part = wanted[at : at + _MAX_VARIABLES]
        marks = ",".join("?" * len(part))
        query = f"SELECT hash FROM blobs WHERE hash IN ({marks})"
        found.extend(h for (h,) in db.execute(query, part))
    return found


def fetch(db: sqlite3.Connection, hashes: Iterable[str]) -> dict[str, bytes]:
    """The original bytes of every blob named in ``hashes`` that is stored."""
    wanted = sorted(set(hashes))
    found: dict[str, bytes] = {}
    for at in range(0, len(wanted), _MAX_VARIABLES):
        part = wanted[at : at + _MAX_VARIABLES]
        marks = ",".join("?" * len(part))
        query = f"SELECT hash, body, codec FROM blobs WHERE hash IN ({marks})"
        found.update((h, unpack(body, codec)) for h, body, codec in db.execute(query, part))
    return found


def file_bytes(db: sqlite3.Connection, rel: str) -> bytes | None:
    """What the issued file ``rel`` holds according to the database (its blob, or its chunks
    in order), or None when the database holds no copy of it."""
    found = db.execute(
        "SELECT blobs.body, blobs.codec FROM files JOIN blobs ON blobs.hash = files.hash "
        "WHERE files.path = ?",
        (rel,),
    ).fetchone()
    if found is not None:
        return unpack(found[0], found[1])
    chunks = db.execute(
        "SELECT blobs.body, blobs.codec FROM file_chunks "
        "JOIN blobs ON blobs.hash = file_chunks.hash "
        "WHERE file_chunks.path = ? ORDER BY file_chunks.seq",
        (rel,),
    ).fetchall()
    return b"".join(unpack(body, codec) for body, codec in chunks) if chunks else None
