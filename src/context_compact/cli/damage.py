"""A session whose journal cannot be read: one line naming it, never a traceback.

``readable(session)`` is what the reading commands (``sessions``, ``inspect``, ``export``,
``doctor``) share; the other sessions of the store stay usable.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from ..store.base import OnDatabaseFile
from ..store.witness import CorruptJournal

BROKEN = (ValueError, KeyError, TypeError, IndexError, RecursionError, sqlite3.DatabaseError)
"""What reading a damaged journal raises: ``CorruptJournal`` (a ``ValueError``), a replay that
does not fit ("journal out of order"), a record missing a key, SQLite's "malformed"."""


def problem(error: BaseException, store: object = None) -> str:
    """What is wrong, in one line; SQLite's own errors with the database file named, what
    its ``integrity_check`` says and what to do (``store``: the store that raised it)."""
    if isinstance(error, sqlite3.Error) and isinstance(store, OnDatabaseFile):
        from .store_errors import damage_line

        return damage_line(Path(store.db_path).resolve(), error)
    text = " ".join(str(error).split()) or type(error).__name__
    return text if isinstance(error, CorruptJournal) else f"{type(error).__name__}: {text}"


@contextmanager
def readable(session: str, store: object = None) -> Iterator[None]:
    """A damaged session as one ``ClickException`` line naming it."""
    try:
        yield
    except BROKEN as error:
        said = problem(error, store)
        advice = "" if "integrity_check" in said else " (see `context-compact doctor`)"
        raise click.ClickException(f"session {session} cannot be read: {said}{advice}") from None


__all__ = ["BROKEN", "problem", "readable"]
