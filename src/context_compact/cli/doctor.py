"""``context-compact doctor``: check every session of a work directory, and say what is whole.

Each session's journal is loaded the way a resume loads it (every hash link and the witness
checked, ``store/witness.py``) and replayed, from its newest checkpoint and from its first
record: a checkpoint that could not be used is named (the resume fell back to a longer
replay), and one that restores another view than the full replay is damage; the database
gets SQLite's ``integrity_check``, or for a PostgreSQL store (``--store postgresql://...``)
its own check of the texts and files it keeps (``PostgresStore.check_database``: every
blob hashes to its name).
A damaged session is named with where the damage starts and how much before it is whole
(what a repair can keep), and a FileStore journal whose meta file is lost is named as
such; the others are listed as ok, and one that another live process is
writing says so (it is read as of one moment: an append in progress is not damage). Exit
status 1 when anything is wrong. Last, the framework extras installed here (the adapters one
can import: ``integrations.frameworks``), read from package metadata, none imported.

``readable(session)`` is what the reading commands (``sessions``, ``inspect``, ``export``)
share: a session whose journal cannot be read is one error line naming it, never a
traceback, and the other sessions of the store stay usable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ..errors import CorruptStore
from ..integrations.frameworks import installed
from ..store.base import ChecksDatabase, KnowsWriters, OnDatabaseFile, Store
from ..store.files import FileStore
from ..store.meta import sessions_of
from ..store.witness import CorruptJournal
from .damage import BROKEN, problem, readable, whole_store
from .outcome import dumps
from .sessions import json_option, no_store_here, open_store, workdir_option
from .store_errors import corrupt_line, guards_store, select_store


def check_session(store: Store, session: str) -> dict[str, Any]:
    """One session's health: ``ok``, and where it is damaged and what is whole when not."""
    from ..compactor import Compactor
    from ..policy import Policy
    from ..session.engine import SessionEngine

    try:
        records = list(store.records(session))
        resumed = Compactor(Policy.default(), store, session=session)
        view = resumed.view()
        engine = resumed.engine
        fallback = engine.session.journal.fallback if isinstance(engine, SessionEngine) else None
        replayed = Compactor(Policy.default(), _FullReplay(store), session=session).view()
    except BROKEN as error:
        if whole_store(error, store):
            raise
        row: dict[str, Any] = {"id": session, "ok": False, "problem": problem(error, store)}
        if isinstance(error, CorruptJournal):
            row.update(unit=error.unit, at=error.at, whole=error.whole)
        return row
    row = {"id": session, "ok": True, "records": len(records)}
    if fallback is not None:
        row["checkpoint"] = fallback
    if json.dumps(view) != json.dumps(replayed):
        row.update(ok=False, problem="its newest checkpoint restores another view than a replay")
    owner = live(store, session)
    if owner is not None:
        row["live"] = owner
    return row


class _FullReplay:
    """The store with its checkpoints hidden: a resume replays every record (what a
    checkpoint must restore to, byte for byte)."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        if name in ("checkpoints", "records_from"):
            raise AttributeError(name)
        return getattr(self._store, name)


def live(store: Store, session: str) -> str | None:
    """Who is writing ``session`` now ("process P on HOST"), if another live process is: its
    journal is read as of one moment, and what that writer appends after is not checked."""
    from ..store.lease import same_process

    owner = store.writer(session) if isinstance(store, KnowsWriters) else None
    if owner is None or same_process(owner):
        return None
    return f"process {owner.pid} on {owner.host}"


def integrity(store: Store) -> str | None:
    """SQLite's ``integrity_check`` answer for a database store, a PostgreSQL store's own
    check (None for other stores)."""
    if isinstance(store, ChecksDatabase):
        return str(store.check_database())
    if not isinstance(store, OnDatabaseFile):
        return None
    from ..store.sqlite.checks import integrity as check

    return "; ".join(check(store.db_path))


@click.command("doctor")
@workdir_option
@json_option
@click.option(
    "--store",
    "url",
    metavar="URL",
    default=None,
    help="The store to check (as the global --store: sqlite:///PATH, file:///DIR, "
    "postgresql://HOST/DB[?schema=NAME]); default: the work directory's.",
)
@guards_store
def doctor_command(workdir: Path | None, as_json: bool, url: str | None) -> None:
    """Check every session of a work directory: hash chains, lost tails, replays, and the
    database's integrity; say which session is damaged where and what is recoverable."""
    if url is not None:
        select_store(url)
    if url is None and no_store_here(workdir):
        # Nothing to check is no failure: what is installed is still worth saying.
        _nothing_to_check(workdir, as_json)
        return
    store = open_store(workdir)
    label = "check" if isinstance(store, ChecksDatabase) else "integrity_check"
    try:
        answer = integrity(store)
        rows = [check_session(store, meta.id) for meta in sessions_of(store)]
        if isinstance(store, FileStore):  # a journal whose meta file is lost is no session
            rows += [{"id": s, "ok": False, "problem": line} for s, line in store.lost_metas()]
    except CorruptStore as error:  # the store itself, not one session: one line for all
        # Damage to the database itself: what to do with the file, not "run doctor".
        db = Path(store.db_path).resolve() if isinstance(store, OnDatabaseFile) else None
        raise click.ClickException(corrupt_line(error, db)) from None
    finally:
        store.close()
    bad = [row for row in rows if not row["ok"]]
    frameworks = installed()
    if as_json:
        report = {"integrity_check": answer, "sessions": rows, "frameworks": frameworks}
        click.echo(dumps(report, indent=1))
    else:
        if answer is not None:
            click.echo(f"database: {label}: {answer}")
        for row in rows:
            if row["ok"]:
                being = f"; live: being written by {row['live']}" if "live" in row else ""
                if "checkpoint" in row:
                    being += f"; checkpoint passed over: {row['checkpoint']}"
                click.echo(f"{row['id']}: ok ({row['records']:,} records{being})")
                continue
            whole = ""
            if "whole" in row:
                whole = f"; recoverable: the first {row['whole']:,} {row['unit']}s"
            click.echo(f"{row['id']}: DAMAGED: {row['problem']}{whole}")
        click.echo(f"{len(rows) - len(bad)} of {len(rows)} sessions ok")
        click.echo(f"framework extras: {_extras_line(frameworks)}")
    if bad or (answer is not None and answer != "ok"):
        raise SystemExit(1)


def _nothing_to_check(workdir: Path | None, as_json: bool) -> None:
    frameworks = installed()
    if as_json:
        report: dict[str, object] = {
            "integrity_check": None,
            "sessions": [],
            "frameworks": frameworks,
        }
        click.echo(dumps(report, indent=1))
        return
    click.echo(f"no sessions in {Path(workdir or Path.cwd()).resolve()}: nothing to check")
    click.echo(f"framework extras: {_extras_line(frameworks)}")


def _extras_line(frameworks: dict[str, dict[str, str]]) -> str:
    if not frameworks:
        return "none installed"
    return ", ".join(f"{x} ({f['package']} {f['version']})" for x, f in frameworks.items())


__all__ = ["BROKEN", "check_session", "doctor_command", "integrity", "problem", "readable"]
