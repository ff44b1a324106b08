"""SqliteStore's texts: each stored once in ``blobs`` by the sha256 of its bytes, compressed.

A row is ``(hash, size, body, codec, tag)``: ``hash`` and ``size`` are of the original bytes,
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

Found by ``tag`` (migration 0006): the first 8 bytes of the hash as a signed integer, in a
plain (not unique) index. The hash itself is not indexed: a 64-character key filled a
512-byte index page with ~5 entries, so each new text split pages at random places of a deep
tree (~3 index pages written per new text, counted from the WAL's frames); an integer entry
is ~16 bytes, and the same texts cost ~1.8 pages each (``scripts/sqlite_wal_frames.py``).
Rows are appended in rowid order, so a turn's texts share the table's last page. A lookup
compares the whole hash, so two texts whose tags collide are both found and told apart.
Without a unique key a text is stored once because ``insert`` looks it up first inside the
caller's write transaction (``BEGIN IMMEDIATE``: no other writer in between).

Invariant: ``unpack(*pack(data)) == data`` for all bytes, and a reader checks the sha256 of
what it unpacked, so a damaged row is found whatever the codec (``CorruptJournal``).
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

from ..codec import sha256

LEVEL = 1  # the fastest level; higher ones gain ~10% more at 2-3x the CPU (measured here)
MIN_SAVING = 0.1
ZLIB = "zlib"
INSERT = "INSERT INTO blobs (hash, size, body, codec, tag) VALUES (?, ?, ?, ?, ?)"
HEX = 64  # characters of a sha256 digest in hex
_MAX_VARIABLES = 500  # under SQLite's smallest default limit on ? per statement


def tag(digest: object) -> int:
    """The index key of the text with sha256 ``digest`` (hex): its first 8 bytes as a signed
    64-bit integer (0 for a digest that is not hex: it then matches no stored hash)."""
    try:
        return int.from_bytes(bytes.fromhex(str(digest)[:16]), "big", signed=True)
    except ValueError:
        return 0


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
) -> tuple[str, int, bytes, str | None, int]:
    """The ``blobs`` row that stores ``data`` (its digest given when already known)."""
    body, codec = pack(data, compress)
    digest = digest or sha256(data)
    return (digest, len(data), body, codec, tag(digest))


def insert(
    db: sqlite3.Connection, blobs: Iterable[tuple[str, bytes]], compress: bool = True
) -> None:
    """Store each ``(digest, data)`` not stored yet (inside the caller's write transaction).

    The ones already there are looked up first, so a text the log holds already costs
    neither a compression nor a write."""
    pending = dict(blobs)
    if not pending:
        return
    present = set(fetch_present(db, pending))
    rows = [row(data, d, compress) for d, data in pending.items() if d not in present]
    db.executemany(INSERT, rows)


def _by_tag(
    db: sqlite3.Connection, hashes: Iterable[str], columns: str
) -> Iterator[tuple[Any, ...]]:
    """``(hash, *columns)`` of the stored rows whose hash is one of ``hashes``."""
    wanted = set(hashes)
    tags = sorted({tag(h) for h in wanted})
    for at in range(0, len(tags), _MAX_VARIABLES):
        part = tags[at : at + _MAX_VARIABLES]
        marks = ",".join("?" * len(part))
        query = f"SELECT hash{columns} FROM blobs WHERE tag IN ({marks}) ORDER BY rowid"
        for found in db.execute(query, part):
            if found[0] in wanted:
                yield found


def fetch_present(db: sqlite3.Connection, hashes: Iterable[str]) -> list[str]:
    return sorted({found[0] for found in _by_tag(db, hashes, "")})


def fetch(db: sqlite3.Connection, hashes: Iterable[str]) -> dict[str, bytes]:
    """The original bytes of every blob named in ``hashes`` that is stored."""
    found: dict[str, bytes] = {}
    for digest, body, codec in _by_tag(db, hashes, ", body, codec"):
        found.setdefault(digest, unpack(body, codec))
    return found


def file_bytes(db: sqlite3.Connection, rel: str) -> bytes | None:
    """What the issued file ``rel`` holds according to the database (its blob, its pieces, or
    its chunks in order), or None when the database holds no copy of it."""
    found = db.execute("SELECT hash, pieces FROM files WHERE path = ?", (rel,)).fetchone()
    digest, pieces = found if found is not None else (None, None)
    if digest is not None:
        whole = fetch(db, [digest]).get(digest)
        if whole is not None:
            return whole
    if pieces:
        hashes = [pieces[at : at + HEX] for at in range(0, len(pieces), HEX)]
        texts = fetch(db, hashes)
        kept = [texts[h] for h in hashes if h in texts]
        return b"".join(kept) if kept else None
    chunks = db.execute(
        "SELECT hash, body, codec FROM file_chunks WHERE path = ? ORDER BY seq", (rel,)
    ).fetchall()
    # Rows from before migration 0006 name their piece by hash instead of holding it.
    texts = fetch(db, [h for h, body, _ in chunks if body is None and h is not None])
    parts = [unpack(body, codec) if body is not None else texts.get(h) for h, body, codec in chunks]
    present = [part for part in parts if part is not None]
    return b"".join(present) if present else None
