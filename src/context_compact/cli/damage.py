"""A session whose journal cannot be read: one line naming it, never a traceback.

``readable(session)`` is what the reading commands (``sessions``, ``inspect``, ``export``,
``doctor``) share; the other sessions of the store stay usable.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

import click

from ..store.witness import CorruptJournal

BROKEN = (ValueError, KeyError, TypeError, IndexError, RecursionError, sqlite3.DatabaseError)
"""What reading a damaged journal raises: ``CorruptJournal`` (a ``ValueError``), a replay that
does not fit ("journal out of order"), a record missing a key, SQLite's "malformed"."""


def problem(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if isinstance(error, CorruptJournal) else f"{type(error).__name__}: {text}"


@contextmanager
def readable(session: str) -> Iterator[None]:
    """A damaged session as one ``ClickException`` line naming it."""
    try:
        yield
    except BROKEN as error:
        raise click.ClickException(
            f"session {session} cannot be read: {problem(error)} (see `context-compact doctor`)"
        ) from None


__all__ = ["BROKEN", "problem", "readable"]
