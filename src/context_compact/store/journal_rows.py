"""A session journal as database rows: which table a record goes to, and the hash chain check.

What a database store (``SqliteStore``, ``PostgresStore``) does the same way, whatever its SQL:

* ``route``: a record goes to the table of its kind (``messages``, ``edits``, ``events``; any
  other kind to ``records`` with its kind as a column); a message also keeps its ``id`` and
  ``parent`` as columns. Each row starts with the record's offset in its batch and ends with
  its stored ``body`` and ``link``.
* ``check_chain``: the rows of a session read back in position order must have consecutive
  positions from 0 and links equal to ``witness.link`` chained over their bodies from
  ``witness.ROOT`` (a stored NULL link, a row written before links existed, is recomputed
  but not compared). The first row that is not so is ``CorruptJournal`` naming it and how
  many rows before it are whole.
* ``check_suffix``: the same for the rows from a position on, continuing from the link
  stored before it and reaching the witness's link (a reader that skips the prefix).
* ``check_blobs``: every text a record refers to by hash (``blobrefs.py``) is there and hashes
  to its name.
* ``settled_records``: ``records_from``: a session's records from a position, read in one
  snapshot after the witness (``witness.settled``: written after each commit, it counts no
  more than the snapshot holds), their texts put back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from . import witness
from .base import Record
from .blobrefs import restore
from .codec import dumps, sha256
from .journal import CorruptJournal, valid_session_id

TABLES = ("messages", "edits", "events", "records")
_TABLE_OF = {"message": "messages", "edit": "edits", "event": "events"}


def table_of(kind: str) -> str:
    return _TABLE_OF.get(kind, "records")


def route(
    records: Sequence[Record],
    bodies: Sequence[str],
    links: Sequence[str],
    column: Callable[[Any], str | None],
) -> dict[str, list[tuple[Any, ...]]]:
    """Each table's rows: ``(offset, [id, parent | kind,] body, link)``."""
    rows: dict[str, list[tuple[Any, ...]]] = {table: [] for table in TABLES}
    for offset, (record, body, link) in enumerate(zip(records, bodies, links, strict=True)):
        table = table_of(record["kind"])
        if table == "messages":
            ids = (column(record.get("id")), column(record.get("parent")))
            rows[table].append((offset, *ids, body, link))
        elif table == "records":
            rows[table].append((offset, record["kind"], body, link))
        else:
            rows[table].append((offset, body, link))
    return rows


def chain(head: str, bodies: Sequence[str]) -> list[str]:
    """The links after each of ``bodies`` (ASCII JSON), continuing from ``head``."""
    links = []
    for body in bodies:
        head = witness.link(head, body.encode("ascii"))
        links.append(head)
    return links


def check_chain(session: str, where: str, rows: Sequence[tuple[Any, ...]]) -> list[str]:
    """The chain after each ``(pos, body, link)`` row; ``CorruptJournal`` at the first row
    missing or altered."""
    links: list[str] = []
    head = witness.ROOT
    for pos, (at, body, stored) in enumerate(rows):
        head = witness.link(head, str(body).encode("utf-8", "surrogatepass"))
        if at != pos or (stored is not None and stored != head):
            what = f"record {pos} is missing" if at != pos else f"record {pos} was altered"
            raise CorruptJournal(
                f"session {session!r} in {where}: {what} (hash chain differs); "
                f"the {pos} records before it are whole",
                session,
                pos,
                pos,
                "record",
            )
        links.append(head)
    return links


def check_blobs(
    session: str, where: str, wanted: Sequence[set[str]], blobs: dict[str, bytes]
) -> None:
    """``CorruptJournal`` at the first record whose text by hash is missing or altered."""
    for pos, hashes in enumerate(wanted):
        for digest in sorted(hashes):
            body = blobs.get(digest)
            if body is None or sha256(body) != digest:
                state = "missing" if body is None else "altered"
                raise CorruptJournal(
                    f"session {session!r} in {where}: a text of record {pos} is "
                    f"{state} (blob {digest[:12]}); the {pos} records before it are whole",
                    session,
                    pos,
                    pos,
                    "record",
                )


def check_suffix(
    session: str, where: str, rows: list[Any], seen: witness.Seen | None, start: int
) -> list[str]:
    """The chain after each row from ``start - 1`` on, given the rows from there: it
    continues from the link stored with record ``start - 1`` and must reach the witness's
    link at its count, so a prefix read skipped is vouched for by the witness (what hashes
    to its link from that stored link is what was written). ``CorruptJournal`` when it does
    not, or cannot be checked so (no witness that far, no stored link): a full read decides."""

    def refuse(what: str) -> CorruptJournal:
        return CorruptJournal(
            f"session {session!r} in {where}: reading from record {start}: {what}",
            session,
            start,
            0,
            "record",
        )

    if not rows or rows[0][0] != start - 1 or not rows[0][2]:
        raise refuse("no stored link before it")
    if seen is None or seen.count < start:
        raise refuse("the witness does not reach it")
    head = str(rows[0][2])
    links = [head]
    for offset, (at, body, stored) in enumerate(rows[1:]):
        head = witness.link(head, str(body).encode("utf-8", "surrogatepass"))
        if at != start + offset or stored != head:
            raise refuse(f"record {start + offset} does not continue the chain")
        links.append(head)
    if start - 1 + len(links) < seen.count or links[seen.count - start] != seen.link:
        raise refuse("the chain does not reach the witness's link")
    return links


def column(value: Any, nul: bool = True) -> str | None:
    """A message's id or parent as a column: the text when the database can hold it (valid
    UTF-8; without NUL when ``nul`` is False, as PostgreSQL's text), else its JSON."""
    if value is None:
        return None
    if isinstance(value, str) and (nul or "\x00" not in value):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            pass
    return dumps(value)


def settled_records(
    session: str,
    where: object,
    witness_path: Path,
    read: Callable[[witness.Seen | None], tuple[list[Any], dict[str, bytes]]],
) -> Iterator[dict[str, Any]]:
    """The records ``read`` returns (bodies and the blobs they refer to), read after the
    witness at ``witness_path``; ``KeyError`` naming ``where`` for an id no store issues."""
    if not valid_session_id(session):
        raise KeyError(f"no session {session!r} in {where}")
    bodies, blobs = witness.settled(witness_path, read)
    return iter([restore(body, blobs.__getitem__) for body in bodies])


__all__ = [
    "TABLES",
    "chain",
    "check_blobs",
    "check_chain",
    "check_suffix",
    "column",
    "route",
    "settled_records",
    "table_of",
]
