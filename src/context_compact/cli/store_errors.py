"""A damaged or refusing session store as one line: ``guards_store`` wraps a command so that a
store error out of ``<workdir>/.context-compact/sessions.db`` (or the ``--store``) ends the
command with one line naming the file and what to do, never a traceback:

* ``CorruptStore`` (garbage bytes, flipped bytes, a file that is no database): the store's
  own line (SQLite's words and ``integrity_check``'s), and how to restore or move it aside;
* ``StoreRefused`` (the store maps its driver's errors to it, ``store.boundary``), by its
  ``reason``: locked by another process past the wait, a full disk, a file that cannot be
  written, a failing disk, the server gone;
* an ``OSError`` of the store's files (a folder that is a file, no permission);
* a value the store could not decode (bad JSON read back from it).

The catch is at the command, not at opening the store: a few flipped bytes surface only when a
damaged page or value is read, deep inside a replay, and a refused write may come back
wrapped (``StoreUnavailable``): the store's error is found along the ``__cause__`` chain.
"""

from __future__ import annotations

import contextlib
import functools
import os
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ParamSpec, TypeVar

import click

from ..errors import CorruptStore, LinkRefused, ServerUnavailable, StoreRefused

P = ParamSpec("P")
R = TypeVar("R")

STORE_PACKAGE = str(Path(__file__).resolve().parents[1] / "store")


def integrity(db: Path) -> str:
    """SQLite's own verdict on ``db``: ``PRAGMA integrity_check``'s first answers, read only."""
    from ..store.sqlite.checks import integrity as check

    answer = "; ".join(" ".join(line.split()) for line in check(db, 3))
    return answer if len(answer) <= 200 else answer[:199] + "…"


def store_damage(error: BaseException) -> BaseException | None:
    """The store's error behind ``error`` (itself or a cause: ``CorruptStore`` or
    ``StoreRefused``), or a value the store could not decode (bad JSON or UTF-8 read back
    from it); None for anything else."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (CorruptStore, StoreRefused)):
            return current
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    if isinstance(error, (ValueError, KeyError, TypeError)):
        frames = traceback.extract_tb(error.__traceback__)
        if any(frame.filename.startswith(STORE_PACKAGE) for frame in frames):
            return error
    return None


def damage_line(db: Path, error: BaseException | str) -> str:
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


def refused_line(db: Path, error: StoreRefused) -> str | None:
    """A store that refused, by why, in one line naming it and what to do; None for one
    that names no file or server of its own (``ReadOnlyStore``: an ``OSError`` line)."""
    if isinstance(error, ServerUnavailable):
        return str(error)
    if not error.where:
        return None
    where = Path(error.where)
    if not error.code.startswith("SQLITE"):
        # A server's refusal, or the store's own words (a schema it cannot upgrade while
        # read only): they name the store and say what is wrong.
        return str(error).rstrip(".") + "."
    if where.resolve() == db.resolve():
        where = db
    backend = error.backend_error
    said = " ".join(str(backend if backend is not None else error).split())[:200]
    if error.reason == "busy":
        return (
            f"the session store {where} is busy: {said} (another process held its write "
            "lock longer than the store waits). Retry once that process is done with it."
        )
    if error.reason == "full":
        return (
            f"cannot write the session store {where}: {said}. Free space on its disk, then retry."
        )
    if error.reason == "read-only":
        return (
            f"cannot write the session store {where}: {said}. Make it writable "
            "(check its permissions and those of its folder), or use another --workdir."
        )
    if error.reason == "io":
        return (
            f"cannot use the session store {where}: {said}. Check the disk it is on, then "
            "retry; `context-compact doctor` says which sessions are whole."
        )
    return damage_line(where, said)


def advice(db: Path | None) -> str:
    """What to do about a damaged store: the SQLite file ``db``, or the server ``--store``
    names (``db`` None, or a server selected)."""
    from .store_choice import selected

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
    named = Path(os.fsdecode(error.filename)) if isinstance(error.filename, (str, bytes)) else None
    # The store's own files: a folder of them the user cannot read fails before any store
    # code runs (the command's first look at whether the file is there).
    ours = named is not None and named.resolve().is_relative_to(db.parent.resolve())
    if not ours and not any(frame.filename.startswith(STORE_PACKAGE) for frame in frames):
        return None
    from .store_choice import selected

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


def store_line(db: Path, error: BaseException) -> str | None:
    """The one line for a store error out of a command (None: not the store's)."""
    if isinstance(error, CorruptStore):
        return corrupt_line(error, db)
    if isinstance(error, LinkRefused):  # a planted link: named, never followed
        return str(error)
    damage = store_damage(error)
    if isinstance(damage, CorruptStore):
        return corrupt_line(damage, db)
    if isinstance(damage, StoreRefused):
        line = refused_line(db, damage)
        if line is None:
            # A store opened for reading only (``ReadOnlyStore``), however deep the refused
            # write was wrapped (``StoreUnavailable`` out of the session journal).
            line = unusable_line(db, damage)
        if line is not None:
            return line
        damage = None
    if damage is None:
        return unusable_line(db, error) if isinstance(error, OSError) else None
    return damage_line(db, damage)


@contextlib.contextmanager
def store_errors(db: Path) -> Iterator[None]:
    from ..store.url import sqlite_file
    from .store_choice import selected

    # ``--store sqlite:///...`` or CC_STORE_URL: that file, not the work directory's, is the one.
    db = sqlite_file(selected()) or db
    try:
        yield
    except click.exceptions.Exit:
        raise
    except click.ClickException as error:
        # The store's own one line (``CorruptStore``: the file and integrity_check's answer),
        # with what to do about it.
        said = error.message
        if isinstance(error.__context__, CorruptStore) and not (
            "aside" in said or "Restore" in said
        ):
            raise click.ClickException(f"{error.message.rstrip('.')}. {advice(db)}") from None
        raise
    except Exception as error:
        line = store_line(db, error)
        if line is None:
            raise
        raise click.ClickException(line) from None


def select_store(url: str | None, option: str = "--store") -> None:
    """The store URL the command was given (None: the work directory's SQLite), checked
    before anything is opened: a URL of no known form is a usage error naming it."""
    from ..store.url import check
    from .store_choice import select

    if url is not None and not url.strip():
        # An empty value (often an unset shell variable) is a mistake, not the default.
        raise click.BadParameter(
            "is empty; leave it out for the work directory's store", param_hint=option
        )
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
    "refused_line",
    "select_store",
    "store_damage",
    "store_errors",
    "store_line",
    "unusable_line",
]
