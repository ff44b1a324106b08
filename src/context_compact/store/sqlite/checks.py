"""SqliteStore's integrity checks: a session's rows against their hash chain, the witness and
their blobs' hashes (``witness.py``). Each failure is ``CorruptJournal`` naming the session,
the first record that differs and how many before it are whole. The row and blob checks are
the ones every database store shares (``journal_rows.py``); the witness file is SQLite's.

``integrity(path)`` is SQLite's own verdict on a database file, read only: what the store's
errors and the CLI (``doctor``, a damaged store's one line) quote.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .. import witness
from ..journal_rows import check_blobs, check_chain, check_suffix


def verify_rows(session: str, where: str, rows: list[Any], seen: witness.Seen | None) -> list[str]:
    """The chain after each ``(pos, body, link)`` row, checked against the links stored and
    the witness ``seen`` (read before the rows' read transaction began)."""
    links = check_chain(session, where, rows)
    witness.verify(session, where, links, seen, "record")
    return links


def verify_blobs(session: str, where: str, wanted: list[set[str]], blobs: dict[str, bytes]) -> None:
    """Every text record ``pos`` refers to (``wanted[pos]``) is there, with its hash."""
    check_blobs(session, where, wanted, blobs)


def integrity(path: Path | str, most: int | None = None) -> list[str]:
    """``PRAGMA integrity_check``'s answers on the file at ``path`` (its first ``most``), or
    SQLite's words when the check cannot run; ``["ok"]`` for a whole database."""
    pragma = "PRAGMA integrity_check" + ("" if most is None else f"({most})")
    try:
        uri = f"file:{quote(str(path))}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
            return [str(row[0]) for row in db.execute(pragma).fetchall()]
    except sqlite3.Error as error:
        return [str(error)]


verify_suffix = check_suffix
"""The rows from a position on, against the link stored before it and the witness."""
