"""SqliteStore's journal rows: one row per ``append``, holding that batch's records together.

Table ``journal`` (migration 0007), ``WITHOUT ROWID`` keyed by ``(session, pos)``: ``pos`` is
the position of the row's first record in the session's journal and ``count`` how many it
holds; ``body`` is their stored bodies (ASCII JSON, ``blobrefs.py``) joined by ``SEPARATOR``,
zlib-compressed when ``codec`` is ``'zlib'``; ``links`` is each record's ``witness.link``
(32 hex characters each) concatenated, or ``''`` for a record written before links existed.

An append of more than ``ROW_CHARS`` of bodies takes several rows (whole records each).

Why one row per append: a turn's records (two messages, sometimes an edit and an event) were
3-4 rows of 300-1000 bytes in four tables, each with an index on ``(session, pos)``: every
commit wrote the last page of up to eight b-trees, and on 512-byte pages a 400-byte row fills
a page on its own. Now a turn's records are one row of one b-tree, its pages filled (counted
from the WAL frames of ``bench --store-io``: the README's "The stores" section). Rows written
before 0007 were copied over one record a row, as they were, so their chain still verifies.

Invariants: ``expand`` gives back exactly ``count`` ``(pos, body, link)`` triples per row, at
consecutive positions from the row's ``pos``, as ``journal_rows.check_chain`` reads them; a
row whose body cannot be decoded (flipped bytes included: bodies and links are read as
bytes) or splits into another number of records gives bodies that cannot match their links,
so the chain check names its first record as altered. A body never
contains ``SEPARATOR``: ``journal.dumps`` writes JSON on one line, escaping newlines.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Sequence
from typing import Any

from .blobs import pack as pack_text
from .blobs import unpack as unpack_text

SEPARATOR = "\n"
LINK_CHARS = 32  # a witness.link: blake2b-128 as hex
ROW_CHARS = 1 << 16
"""Bodies one row holds at most (unless one record is longer): reading any position decodes
its whole row, so an append of a whole history (a cold start) must not be one row of
megabytes that a search's catch-up decodes again for every page of positions."""
DAMAGED = "\x00damaged row"  # a body no record serializes to: its link cannot match
INSERT = "INSERT INTO journal (session, pos, count, body, links, codec) VALUES (?, ?, ?, ?, ?, ?)"
# Text read as bytes: a flipped byte that makes a body or its links invalid UTF-8 is a record
# whose chain does not match (named by the chain check), not an error out of the driver.
_COLUMNS = "pos, count, CAST(body AS BLOB), CAST(links AS BLOB), codec"
_COVERING = (
    f"SELECT {_COLUMNS} FROM journal WHERE session = :s AND pos >= "
    "coalesce((SELECT max(pos) FROM journal WHERE session = :s AND pos <= :a), 0) "
    "AND pos < :b ORDER BY pos"
)

Entry = tuple[int, str, str | None]  # (position, stored body, stored link or None)


def rows(
    session: str, pos: int, bodies: Sequence[str], links: Sequence[str], compress: bool = True
) -> list[tuple[Any, ...]]:
    """The ``journal`` rows of one append: one, unless its bodies pass ``ROW_CHARS``, when
    each row holds as many whole records as fit in it (at least one)."""
    found: list[tuple[Any, ...]] = []
    first, size = 0, 0
    for at, body in enumerate(bodies):
        if at > first and size + len(body) > ROW_CHARS:
            found.append(row(session, pos + first, bodies[first:at], links[first:at], compress))
            first, size = at, 0
        size += len(body) + 1
    if bodies:
        found.append(row(session, pos + first, bodies[first:], links[first:], compress))
    return found


def row(
    session: str, pos: int, bodies: Sequence[str], links: Sequence[str], compress: bool = True
) -> tuple[Any, ...]:
    """The ``journal`` row of one append: ``bodies`` at positions ``pos``, ``pos + 1``, ..."""
    joined = SEPARATOR.join(bodies)
    packed, codec = pack_text(joined.encode("ascii"), compress)
    # Stored as it is, the body stays text (readable with the sqlite3 shell).
    body: str | bytes = joined if codec is None else packed
    return (session, pos, len(bodies), body, "".join(links), codec)


def expand(pos: int, count: int, body: Any, links: Any, codec: Any) -> list[Entry]:
    """The ``(pos, body, link)`` of each record a row holds (see the invariants above)."""
    try:
        data = body.encode("ascii") if isinstance(body, str) else bytes(body)
        text = unpack_text(data, codec).decode("ascii")
        bodies = text.split(SEPARATOR)
    except (ValueError, TypeError, zlib.error):
        bodies = []
    if len(bodies) != count:
        bodies = [DAMAGED] * max(count, 1)
    chain = links.decode("ascii", "replace") if isinstance(links, bytes) else str(links or "")
    stored: list[str | None] = [None] * len(bodies)
    if len(chain) == LINK_CHARS * len(bodies):
        stored = [chain[i * LINK_CHARS : (i + 1) * LINK_CHARS] for i in range(len(bodies))]
    elif chain:
        stored = [""] * len(bodies)  # links there but not one per record: nothing matches
    return [
        (pos + offset, b, link) for offset, (b, link) in enumerate(zip(bodies, stored, strict=True))
    ]


def read(
    db: sqlite3.Connection, session: str, start: int = 0, stop: int | None = None
) -> list[Entry]:
    """The session's records at positions ``start`` up to ``stop`` (all when None), in order."""
    end = (1 << 62) if stop is None else stop
    found = db.execute(_COVERING, {"s": session, "a": start, "b": end}).fetchall()
    entries = [entry for r in found for entry in expand(*r)]
    return [entry for entry in entries if start <= entry[0] < end]


def at(db: sqlite3.Connection, session: str, positions: Sequence[int]) -> list[Entry]:
    """The records at ``positions`` (each read with the row holding it), in position order."""
    wanted = sorted(set(positions))
    entries: dict[int, Entry] = {}
    for pos in wanted:
        if pos in entries:
            continue
        # The row holding ``pos`` holds its neighbours too: they are kept for the next ones.
        found = db.execute(
            f"SELECT {_COLUMNS} FROM journal WHERE session = ? AND pos <= ? "
            "ORDER BY pos DESC LIMIT 1",
            (session, pos),
        ).fetchone()
        if found is not None:
            entries.update((e[0], e) for e in expand(*found))
    return [entries[pos] for pos in wanted if pos in entries]
