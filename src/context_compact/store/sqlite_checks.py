"""SqliteStore's integrity checks: a session's rows against their hash chain, the witness and
their blobs' hashes (``witness.py``). Each failure is ``CorruptJournal`` naming the session,
the first record that differs and how many before it are whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import witness
from .disk import sha256
from .journal import CorruptJournal


def verify_rows(session: str, where: str, rows: list[Any], witnessed: Path) -> list[str]:
    """The chain after each ``(pos, body, link)`` row, checked against the links stored and
    the witness file ``witnessed``."""
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
    witness.verify(session, where, links, witness.read(witnessed), "record")
    return links


def verify_blobs(session: str, where: str, wanted: list[set[str]], blobs: dict[str, bytes]) -> None:
    """Every text record ``pos`` refers to (``wanted[pos]``) is there, with its hash."""
    for pos, hashes in enumerate(wanted):
        for digest in hashes:
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
