"""A session whose journal cannot be read: one line naming it, never a traceback.

``readable(session)`` is what the reading commands (``sessions``, ``inspect``, ``export``,
``doctor``) share; the other sessions of the store stay usable.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from ..errors import BadRecord, CorruptStore
from ..store.base import OnDatabaseFile
from ..store.witness import CorruptJournal

BROKEN = (ValueError, KeyError, TypeError, IndexError, RecursionError, CorruptStore)
"""What reading a damaged journal raises: ``CorruptJournal`` (a ``ValueError``), a replay that
does not fit ("journal out of order"), a record missing a key, a damaged page or value of a
database file (``CorruptStore``: see ``whole_store``). A store that refuses
(``StoreRefused``: locked, full) is no damage of one session: it goes on to the command's
one line (``store_errors``)."""


def whole_store(error: BaseException, store: object) -> bool:
    """``error`` is the whole store's, not one session's: a ``CorruptStore`` of any store but
    a database file (a PostgreSQL schema missing a table, a FileStore meta file cut short).
    SQLite reads a file page by page: damage found reading one session is that session's,
    and the others may still read. The caller raises it on, to the command's one line."""
    return (
        isinstance(error, CorruptStore)
        and not isinstance(error, BadRecord)
        and not isinstance(store, OnDatabaseFile)
    )


def problem(error: BaseException, store: object = None) -> str:
    """What is wrong, in one line; a damaged database file with what its ``integrity_check``
    says and what to do (``store``: the store that raised it)."""
    if (
        isinstance(error, CorruptStore)
        and not isinstance(error, BadRecord)
        and isinstance(store, OnDatabaseFile)
    ):
        from .store_errors import corrupt_line

        return corrupt_line(error, Path(store.db_path).resolve())
    text = " ".join(str(error).split()) or type(error).__name__
    return text if isinstance(error, CorruptJournal) else f"{type(error).__name__}: {text}"


@contextmanager
def readable(session: str, store: object = None) -> Iterator[None]:
    """A damaged session as one ``ClickException`` line naming it."""
    try:
        yield
    except BROKEN as error:
        if whole_store(error, store):
            raise
        said = problem(error, store)
        advice = "" if "integrity_check" in said else " (see `context-compact doctor`)"
        raise click.ClickException(f"session {session} cannot be read: {said}{advice}") from None


__all__ = ["BROKEN", "problem", "readable", "whole_store"]
