"""Damage a SqliteStore journal behind the store's back, one record at a time.

The journal keeps one row per append (``sqlite_journal.py``), so altering or deleting one
record means rewriting the row that holds it: the other records of that row, their links and
the positions of every other row stay as they were, as if only that record had changed.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from pathlib import Path

from context_compact.store.sqlite import journal as sqlite_journal


def tamper_record(
    db: Path | str, session: str, pos: int, change: Callable[[str], str] | None = None
) -> None:
    """Replace the stored body of record ``pos`` with ``change(body)``, or delete the record
    (``change=None``: the records after it keep their positions, so it is missing)."""
    with contextlib.closing(sqlite3.connect(db)) as raw, raw:
        found = raw.execute(
            "SELECT pos, count, body, links, codec FROM journal WHERE session = ? AND pos <= ? "
            "ORDER BY pos DESC LIMIT 1",
            (session, pos),
        ).fetchone()
        assert found is not None and found[0] + found[1] > pos, f"no record {pos}"
        entries = sqlite_journal.expand(*found)
        raw.execute("DELETE FROM journal WHERE session = ? AND pos = ?", (session, found[0]))
        compress = found[4] is not None
        runs: list[list[tuple[int, str, str | None]]] = [[]]
        for at, body, link in entries:
            if at != pos:
                runs[-1].append((at, body, link))
            elif change is None:
                runs.append([])  # a gap: the rows on either side keep their positions
            else:
                runs[-1].append((at, change(body), link))
        for run in runs:
            if run:
                bodies = [body for _, body, _ in run]
                links = [link or "" for _, _, link in run]
                row = sqlite_journal.row(session, run[0][0], bodies, links, compress)
                raw.execute(sqlite_journal.INSERT, row)
