"""SqliteStore's integrity checks: a session's rows against their hash chain, the witness and
their blobs' hashes (``witness.py``). Each failure is ``CorruptJournal`` naming the session,
the first record that differs and how many before it are whole. The row and blob checks are
the ones every database store shares (``journal_rows.py``); the witness file is SQLite's."""

from __future__ import annotations

from typing import Any

from . import witness
from .journal import CorruptJournal
from .journal_rows import check_blobs, check_chain


def verify_rows(session: str, where: str, rows: list[Any], seen: witness.Seen | None) -> list[str]:
    """The chain after each ``(pos, body, link)`` row, checked against the links stored and
    the witness ``seen`` (read before the rows' read transaction began)."""
    links = check_chain(session, where, rows)
    witness.verify(session, where, links, seen, "record")
    return links


def verify_blobs(session: str, where: str, wanted: list[set[str]], blobs: dict[str, bytes]) -> None:
    """Every text record ``pos`` refers to (``wanted[pos]``) is there, with its hash."""
    check_blobs(session, where, wanted, blobs)


def verify_suffix(
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
