"""A damaged session store as one line: ``guards_store`` wraps a command so that an SQLite error
out of ``<workdir>/.context-compact/sessions.db`` (garbage bytes, flipped bytes, a file that
is no database, a read-only file) ends the command with one line naming the file, what
SQLite's ``integrity_check`` says about it and what to do, never a traceback.

The catch is at the command, not at opening the store: a few flipped bytes surface only when a
damaged page or value is read, deep inside a replay. A store that raises its own error for a
corrupt file composes with this as long as it chains the SQLite error (``raise ... from``).
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ParamSpec, TypeVar

import click

P = ParamSpec("P")
R = TypeVar("R")

STORE_PACKAGE = str(Path(__file__).resolve().parents[1] / "store")


def integrity(db: Path) -> str:
    """SQLite's own verdict on ``db``: ``PRAGMA integrity_check``'s first answers, read only."""
    from ..store.sqlite.checks import integrity as check

    answer = "; ".join(" ".join(line.split()) for line in check(db, 3))
    return answer if len(answer) <= 200 else answer[:199] + "…"


def store_damage(error: BaseException) -> BaseException | None:
    """The SQLite error behind ``error`` (itself or a cause), or a value the store could not
    decode (bad JSON or UTF-8 read back from it); None for anything else."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, sqlite3.Error):
            return current
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    if isinstance(error, (ValueError, KeyError, TypeError)):
        frames = traceback.extract_tb(error.__traceback__)
        if any(frame.filename.startswith(STORE_PACKAGE) for frame in frames):
            return error
    return None


def damage_line(db: Path, error: BaseException) -> str:
    """What went wrong with ``db`` and what to do, in one line."""
    # SQLite quotes the undecodable text itself: the column is enough.
    said = " ".join(str(error).split(" with text ")[0].split())[:200]
    if "readonly" in said or "read-only" in said:
        return (
            f"cannot write the session store {db}: {said}. Make it writable "
            "(check its permissions and those of its folder), or use another --workdir."
        )
    verdict = integrity(db) if db.exists() else "the file does not exist"
    what = f"cannot use the session store {db}: {said} (SQLite integrity_check: {verdict})"
    return f"{what}. {advice(db)}"


def advice(db: Path | None) -> str:
    """What to do about a damaged store: the SQLite file ``db``, or the server ``--store``
    names (``db`` None, or a server selected)."""
    from ..store.url import selected

    url = selected()
    if url is not None and url.lower().startswith("file:"):
        return (
            "Restore it from a backup, or move the damaged session's files aside; "
            "`context-compact doctor` says which sessions are whole"
        )
    if db is None or (url is not None and not url.lower().startswith("sqlite:")):
        return (
            "Restore the database from a backup; `context-compact doctor` says which sessions "
            "are whole"
        )
    return f"Restore it from a backup, or move it aside (mv {db} {db}.broken) to start a new one."


def unusable_line(db: Path, error: OSError) -> str | None:
    """A store that cannot be opened or written for a reason of the file system (a folder
    that is a file, no permission, a read-only file system) in one line naming the path and
    what to do; None when ``error`` did not come out of the store."""
    frames = traceback.extract_tb(error.__traceback__)
    if not any(frame.filename.startswith(STORE_PACKAGE) for frame in frames):
        return None
    from ..store.url import selected

    said = error.strerror or str(error)
    where = f"{said}: {error.filename}" if error.filename else said
    url = selected()
    if url is not None:
        return f"cannot use the session store {url}: {where}. Give --store a path you can write."
    return (
        f"cannot use the session store {db}: {where}. Give a work directory you can write "
        "(--workdir), or another --store."
    )


def corrupt_line(error: BaseException, db: Path | None) -> str:
    """A store's own one line about its damage, with what to do unless it says so itself."""
    said = str(error).rstrip(".")
    return said if "aside" in said else f"{said}. {advice(db)}"


@contextlib.contextmanager
def store_errors(db: Path) -> Iterator[None]:
    from ..errors import CorruptStore, LinkRefused
    from ..store.postgres.base import ServerUnavailable
    from ..store.url import selected, sqlite_file

    # ``--store sqlite:///...`` or CC_STORE_URL: that file, not the work directory's, is the one.
    db = sqlite_file(selected()) or db
    try:
        yield
    except click.exceptions.Exit:
        raise
    except click.ClickException as error:
        # The store's own one line (``CorruptStore``: the file and integrity_check's answer),
        # with what to do about it.
        if isinstance(error.__context__, CorruptStore) and "aside" not in error.message:
            raise click.ClickException(f"{error.message.rstrip('.')}. {advice(db)}") from None
        raise
    except CorruptStore as error:
        raise click.ClickException(corrupt_line(error, db)) from None
    except LinkRefused as error:  # a planted link: named, never followed
        raise click.ClickException(str(error)) from None
    except ServerUnavailable as error:  # a store on a server that did not answer
        raise click.ClickException(str(error)) from None
    except Exception as error:
        damage = store_damage(error)
        if damage is None and isinstance(error, OSError):
            line = unusable_line(db, error)
            if line is not None:
                raise click.ClickException(line) from None
        if damage is None:
            raise
        raise click.ClickException(damage_line(db, damage)) from None


def select_store(url: str | None, option: str = "--store") -> None:
    """The store URL the command was given (None: the work directory's SQLite), checked
    before anything is opened: a URL of no known form is a usage error naming it."""
    from ..store.url import check, select

    if url:
        try:
            check(url)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint=option) from None
    select(url)


def guards_store(command: Callable[P, R]) -> Callable[P, R]:
    """Run ``command`` with a damaged store of its ``--workdir`` reported in one line."""

    @functools.wraps(command)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        from ..store import WORKDIR_DB

        root = Path(str(kwargs.get("workdir") or Path.cwd())).resolve()
        with store_errors(root / WORKDIR_DB):
            return command(*args, **kwargs)

    return guarded


__all__ = [
    "advice",
    "corrupt_line",
    "damage_line",
    "guards_store",
    "integrity",
    "select_store",
    "store_damage",
    "store_errors",
    "unusable_line",
]
