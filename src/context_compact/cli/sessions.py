"""``context-compact sessions`` and ``context-compact recall``: the durable sessions of a work
directory, from the command line (the CLI registers them with ``add_command``), and the
helpers every session command shares (``open_store``, ``need_session``, the options).

Both read ``<workdir>/.context-compact/sessions.db`` (the agent's store) and never write to
it; ``--json`` prints what a script needs. A session is summarized by replaying its journal
(the same replay a resume does), so "tokens in view" is what its next request would weigh.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..history.transfer import resumed
from ..session.records import EventRecord, MessageRecord, journal, logged_messages
from ..store.base import DeletesSessions, Store
from ..store.meta import SessionMeta, meta_of, sessions_of
from ..store.meta import source_of as source_of  # kept importable from here
from .outcome import dumps
from .store_errors import guards_store

# What "compactions" counts, here and in ``inspect``: every compaction event the session's
# journal recorded (new results persisted with a preview, old results cleared, summaries,
# reactive compactions), one per pass that changed the view.
COMPACTIONS_MEANS = (
    "compactions: passes that changed the view (results persisted or cleared, summaries), "
    "as inspect ID lists them"
)


def open_store(workdir: Path | None) -> Any:
    """The sessions store of a work directory that has one (a failure naming the folder
    otherwise: a command that only reads never creates a store)."""
    from ..store import WORKDIR_DB
    from .store_choice import cli_store, selected

    root = Path(workdir or Path.cwd()).resolve()
    url = selected()
    if no_store_here(workdir):
        raise click.ClickException(f"no sessions in {root}: {WORKDIR_DB} does not exist there")
    missing = absent_store(url)
    if missing:
        raise click.ClickException(missing)
    from ..store import CorruptStore
    from ..store.postgres.base import ServerUnavailable

    try:
        return cli_store(root)
    except (CorruptStore, ServerUnavailable) as error:
        raise click.ClickException(str(error)) from None


def no_store_here(workdir: Path | None) -> bool:
    """Whether the work directory has no store and no ``--store`` names another."""
    from ..store import WORKDIR_DB
    from .store_choice import selected

    root = Path(workdir or Path.cwd()).resolve()
    return selected() is None and not (root / WORKDIR_DB).is_file()


def absent_store(url: str | None) -> str | None:
    """Why the SQLite or file store ``url`` names cannot be read (None when it exists, or
    names another kind): a command that only reads never creates a store, and an empty
    list from a mistyped path would read as "no sessions"."""
    from ..store.url import sqlite_file

    database = sqlite_file(url)
    if url and database is not None and not database.is_file():
        rest = url.partition(":")[2][3:]
        hint = (
            f"; sqlite:///{rest} is relative to the current directory, an absolute path is "
            f"sqlite:////{rest}"
            if not rest.startswith("/")
            else ""
        )
        return f"no session store at {database} (--store {url}): the file does not exist{hint}"
    if url and url.lower().startswith("file:"):
        from urllib.parse import urlsplit

        rest = url.partition(":")[2]
        folder = Path(urlsplit(url).path if rest.startswith("//") else rest).resolve()
        if not folder.is_dir():
            return f"no session store at {folder} (--store {url}): the folder does not exist"
    return None


def need_session(store: Store, session: str) -> SessionMeta:
    """The meta of session ``session`` (its ``id`` the full id): an id, or the start of one
    that no other session's id starts with; else a failure naming the candidates or the
    newest sessions."""
    meta = meta_of(store, session) or by_prefix(store, session)
    if meta is None:
        raise click.ClickException(f"no session {session!r} (newest: {newest(store)})")
    return meta


def newest(store: Store, most: int = 5, none: str = "none") -> str:
    """The ids of the store's newest sessions, for a message naming what there is."""
    return ", ".join(m.id for m in sessions_of(store)[:most]) or none


def by_prefix(store: Store, prefix: str) -> SessionMeta | None:
    """The meta of the one session whose id starts with ``prefix`` (None when none does); a
    failure naming them when several do."""
    matching = [m for m in sessions_of(store) if prefix and m.id.startswith(prefix)]
    if len(matching) > 1:
        ids = ", ".join(m.id for m in matching[:5])
        more = f" and {len(matching) - 5} more" if len(matching) > 5 else ""
        raise click.ClickException(
            f"session {prefix!r} is ambiguous: {len(matching)} sessions start with it "
            f"({ids}{more}); give more of the id"
        )
    return matching[0] if matching else None


def summary(store: Store, meta: SessionMeta) -> dict[str, Any]:
    """One session's line: when it started, its turns, its view's tokens, its compactions."""
    sid = meta.id
    turns = compactions = messages = 0
    for record in journal(store.records(sid), f"session {sid}"):
        if isinstance(record, MessageRecord):
            messages += 1
            turns += record.message.get("role") == "assistant"
        elif isinstance(record, EventRecord):
            compactions += 1
    return {
        "id": sid,
        "started": meta.created,
        "source": meta.source_text,
        "engine": meta.engine,
        "messages": messages,
        "turns": turns,
        "tokens_in_view": resumed(store, sid).session.measure(),
        "compactions": compactions,
    }


workdir_option = click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Work directory whose sessions to use (default: the current one).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


def tail(text: str, width: int) -> str:
    """``text`` in ``width`` characters keeping what tells sources apart: its first word (the
    kind: import, compact) and its end (the file's last characters, the sidechain)."""
    if len(text) <= width:
        return text
    word = text.split(" ", 1)[0] + " "
    if width < len(word) + 6:
        return "…" + text[len(text) - width + 1 :] if width > 1 else "…"[:width]
    return word + "…" + text[len(text) - (width - len(word) - 1) :]


def middle(text: str, width: int) -> str:
    """``text`` in ``width`` characters: its start and its end, an ellipsis between."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    tail = (width - 1) // 2
    return text[: width - 1 - tail] + "…" + text[len(text) - tail :]


COLUMNS = ("id", "started", "source", "turns", "in view", "compactions")
SOURCE_AT_LEAST = 16
"""Columns the source needs to tell sessions apart; narrower, the start time goes."""


def table_lines(rows: list[dict[str, Any]], width: int, wide: bool) -> list[str]:
    """The table of ``rows`` in ``width`` columns (the source cut to its kind and its end to
    fit; below about 70 columns the start time goes first), or with every source whole when
    ``wide``."""
    cells = [
        [
            row["id"],
            str(row["started"] or "")[5:16].replace("T", " "),
            row["source"],
            f"{row['turns']:,}",
            "-" if row["tokens_in_view"] is None else f"{row['tokens_in_view']:,}",
            f"{row['compactions']:,}",
        ]
        for row in rows
    ]
    names = list(COLUMNS)
    widths = [max([len(name), *(len(c[i]) for c in cells)]) for i, name in enumerate(names)]
    others = sum(widths) - widths[2] + 2 * (len(names) - 1)
    if not wide and width - others < SOURCE_AT_LEAST:
        # Too narrow for every column: the start time tells sessions apart least.
        del names[1], widths[1]
        for cell in cells:
            del cell[1]
        others = sum(widths) - widths[1] + 2 * (len(names) - 1)
    at = names.index("source")
    if not wide:
        widths[at] = max(len("source"), min(widths[at], width - others))
    right = {names.index(n) for n in ("turns", "in view", "compactions")}

    def line(values: list[str]) -> str:
        parts = [
            (v.rjust(w) if i in right else (tail(v, w) if i == at else v).ljust(w))
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    header = line(names)
    return [header, "─" * len(header), *(line(c) for c in cells)]


@click.group("sessions", invoke_without_command=True)
@workdir_option
@json_option
@click.option("--wide", is_flag=True, help="Show every source whole, however wide the terminal.")
@click.pass_context
@guards_store
def sessions(ctx: click.Context, workdir: Path | None, as_json: bool, wide: bool) -> None:
    """List the sessions of a work directory, newest first (rm and prune remove them)."""
    import shutil
    import textwrap

    from .damage import BROKEN, problem, whole_store

    ctx.obj = {"workdir": workdir, "as_json": as_json}
    if ctx.invoked_subcommand is not None:
        return
    if no_store_here(workdir):  # nothing to list is an empty list, not a failure
        click.echo("[]" if as_json else f"no sessions in {Path(workdir or Path.cwd()).resolve()}")
        return
    store = open_store(workdir)
    rows, damaged = [], []
    try:
        for meta in sessions_of(store):
            try:
                rows.append(summary(store, meta))
            except BROKEN as error:  # one damaged session: named, the others still listed
                if whole_store(error, store):
                    raise
                damaged.append({"id": meta.id, "problem": problem(error, store)})
    finally:
        store.close()
    for bad in damaged:
        click.echo(f"error: session {bad['id']} cannot be read: {bad['problem']}", err=True)
    if as_json:
        click.echo(dumps(rows, indent=1))
        return
    width = shutil.get_terminal_size().columns
    click.echo("sessions, newest first")
    for text in table_lines(rows, width, wide):
        click.echo(text)
    legend = (
        f"started: UTC; in view: tokens the session's next request would carry; {COMPACTIONS_MEANS}"
    )
    click.echo(textwrap.fill(legend, width=max(40, width), break_on_hyphens=False))


def _workdir(ctx: click.Context, workdir: Path | None) -> Path | None:
    given = (ctx.obj or {}).get("workdir")
    return workdir or (Path(given) if given else None)


def _as_json(ctx: click.Context, as_json: bool) -> bool:
    return as_json or bool((ctx.obj or {}).get("as_json"))


@sessions.command("rm")
@click.argument("ids", metavar="ID...", nargs=-1, required=True)
@workdir_option
@json_option
@click.pass_context
@guards_store
def remove_command(
    ctx: click.Context, ids: tuple[str, ...], workdir: Path | None, as_json: bool
) -> None:
    """Remove sessions ID... and their logs (all or none: an unknown ID removes nothing)."""
    store: Store = open_store(_workdir(ctx, workdir))
    removed: list[str] = []
    try:
        # Prefixes resolved first: an unknown or ambiguous one removes nothing.
        full = [need_session(store, sid).id for sid in ids]
        if not isinstance(store, DeletesSessions):
            raise click.ClickException(
                f"{type(store).__name__} cannot remove sessions; {', '.join(full)} kept"
            )
        for sid in full:
            _remove(store, sid, quiet=_as_json(ctx, as_json))
            removed.append(sid)
    finally:
        store.close()
    if _as_json(ctx, as_json):
        click.echo(dumps({"removed": removed}, indent=1))


def _remove(store: DeletesSessions, sid: str, quiet: bool = False) -> None:
    from ..errors import SessionLocked

    try:
        store.delete_session(sid)
    except SessionLocked as error:
        raise click.ClickException(f"{error}; {sid} is kept") from None
    if not quiet:
        click.echo(f"removed session {sid}")


@sessions.command("prune")
@click.option("--empty", is_flag=True, help="Remove the sessions no model answered in.")
@click.option("--dry-run", is_flag=True, help="Name what would be removed; remove nothing.")
@workdir_option
@json_option
@click.pass_context
@guards_store
def prune_command(
    ctx: click.Context, empty: bool, dry_run: bool, workdir: Path | None, as_json: bool
) -> None:
    """Remove the sessions that match: --empty, those that logged no message or whose model
    never answered (a run that failed at its first request)."""
    if not empty:
        raise click.UsageError("say what to prune: --empty (sessions that logged no message)")
    quiet = _as_json(ctx, as_json)
    store = open_store(_workdir(ctx, workdir))
    try:
        found = [meta.id for meta in sessions_of(store) if unanswered(store, meta.id)]
        for sid in found:
            if dry_run and not quiet:
                click.echo(f"would remove session {sid}")
            elif not dry_run:
                _remove(store, sid, quiet=quiet)
    finally:
        store.close()
    if quiet:
        key = "would_remove" if dry_run else "removed"
        click.echo(dumps({key: found}, indent=1))
    elif not found:
        click.echo("no empty sessions")


def unanswered(store: Store, sid: str) -> bool:
    """Whether session ``sid`` holds nothing a model said: no message at all, or requests
    only (0 turns), so removing it loses no answer."""
    return not any(
        record.message.get("role") == "assistant" for record in logged_messages(store.records(sid))
    )


@click.command("recall")
@click.argument("session")
@click.argument("query")
@workdir_option
@click.option(
    "--offset",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Character to start the page at (the previous page's next_offset).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=8_000,
    show_default=True,
    help="Characters per page.",
)
@json_option
@guards_store
def recall_command(
    session: str, query: str, workdir: Path | None, offset: int, limit: int, as_json: bool
) -> None:
    """Print the original content SESSION logged that matches QUERY (text, a path the
    session's view named, or 'message N'), one page at a time."""
    from ..session.recall import recall

    store = open_store(workdir)
    try:
        session = need_session(store, session).id
        try:
            page = recall(store, session, query, offset=offset, limit=limit)
        except ValueError as error:
            raise click.UsageError(str(error)) from error
    finally:
        store.close()
    if page.hits == 0:  # as grep: a search that finds nothing ends 1
        raise click.ClickException(f"nothing in session {session}'s log matches {query!r}")
    if as_json:
        data = {
            "query": page.query,
            "hits": page.hits,
            "offset": page.offset,
            "total": page.total,
            "next_offset": page.next_offset,
            "text": page.text,
        }
        click.echo(dumps(data, indent=1))
    else:
        click.echo(str(page))


__all__ = [
    "COMPACTIONS_MEANS",
    "by_prefix",
    "json_option",
    "middle",
    "need_session",
    "newest",
    "open_store",
    "recall_command",
    "sessions",
    "source_of",
    "summary",
    "workdir_option",
]
