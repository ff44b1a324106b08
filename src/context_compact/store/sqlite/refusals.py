"""SQLite's errors as ours: what ``SqliteStore`` and the search index raise past their methods.

``translate(error, path)`` (``store.boundary`` calls it for each exception leaving a method,
with the file of the store or index it left):

* a file SQLite finds damaged or not a database (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``), or a
  stored text that does not decode (Python's "Could not decode to UTF-8", no SQLite code),
  is ``CorruptStore``: one line naming the file, SQLite's words and ``integrity_check``'s;
* any other ``sqlite3.Error`` is ``StoreRefused``: locked past ``busy_timeout``
  (``SQLITE_BUSY``, ``SQLITE_LOCKED``: reason ``busy``), ``SQLITE_FULL`` (``full``),
  ``SQLITE_READONLY``, ``SQLITE_CANTOPEN``, ``SQLITE_PERM`` (``read-only``), ``SQLITE_IOERR``
  (``io``), the rest ``other``; its ``code`` is SQLite's name for it;
* anything else is not SQLite's: None, and it leaves as it is.

Either keeps SQLite's exception as ``__cause__`` (``StoreRefused`` also as ``backend_error``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ...errors import CorruptStore, Refusal, StoreError, StoreRefused
from ..base import OnDatabaseFile
from .tx import unusable

REASONS: dict[str, Refusal] = {
    "SQLITE_BUSY": "busy",
    "SQLITE_LOCKED": "busy",
    "SQLITE_FULL": "full",
    "SQLITE_READONLY": "read-only",
    "SQLITE_CANTOPEN": "read-only",
    "SQLITE_PERM": "read-only",
    "SQLITE_IOERR": "io",
}
"""SQLite's primary result codes and the reason each is; an extended code
(``SQLITE_IOERR_WRITE``, ``SQLITE_READONLY_DBMOVED``) is its primary's."""


def said(error: BaseException) -> str:
    """SQLite's words in one line, without the undecodable text it quotes."""
    return " ".join(str(error).split(" with text ")[0].split())[:200]


def damaged(error: sqlite3.Error) -> bool:
    name = getattr(error, "sqlite_errorname", None) or ""
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return True
    return not name and str(error).startswith("Could not decode")


def translate(error: BaseException, path: Path | str) -> StoreError | None:
    """Ours for SQLite's ``error`` on the database at ``path`` (see the module docstring)."""
    if not isinstance(error, sqlite3.Error):
        return None
    if damaged(error):
        return CorruptStore(unusable(Path(path), said(error)))
    code = getattr(error, "sqlite_errorname", None) or ""
    primary = "_".join(code.split("_")[:2])
    words = said(error) or type(error).__name__
    where = str(path)
    return StoreRefused(
        words if where in words else f"{where}: {words}",
        reason=REASONS.get(primary, "other"),
        where=where,
        code=code,
        backend_error=error,
    )


def of_database(store: OnDatabaseFile, error: BaseException) -> StoreError | None:
    """``translate`` for a store in one database file (``db_path``)."""
    return translate(error, store.db_path)


__all__ = ["REASONS", "damaged", "of_database", "said", "translate"]
