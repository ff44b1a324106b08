"""``context-compact sessions`` and ``context-compact recall``: the durable sessions of a work
directory, from the command line (the CLI registers them with ``add_command``), and the
helpers every session command shares (``open_store``, ``need_session``, the options).

Both read ``<workdir>/.context-compact/sessions.db`` (the agent's store) and never write to
it; ``--json`` prints what a script needs. A session is summarized by replaying its journal
(the same replay a resume does), so "tokens in view" is what its next request would weigh.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ..session.transfer import resumed

COMPACTIONS = ("clear_old_results", "summarize", "compact_history", "reactive_compact")


def open_store(workdir: Path | None) -> Any:
    """The sessions store of a work directory that has one (a usage error otherwise)."""
    from ..store import WORKDIR_DB
    from ..store.url import cli_store, selected

    root = Path(workdir or Path.cwd()).resolve()
    if selected() is None and not (root / WORKDIR_DB).is_file():
        raise click.UsageError(f"no sessions in {root}: {WORKDIR_DB} does not exist there")
    from ..store import CorruptStore

    try:
        return cli_store(root)
    except CorruptStore as error:
        raise click.ClickException(str(error)) from None


def need_session(store: Any, session: str) -> dict[str, Any]:
    """The meta of ``session``, or a usage error naming the newest sessions."""
    meta = store.session_meta(session)
    if meta is None:
        known = ", ".join(m["id"] for m in store.list_sessions()[:5]) or "none"
        raise click.UsageError(f"no session {session!r} (newest: {known})")
    return dict(meta)


def source_of(meta: dict[str, Any]) -> str:
    """Where a session came from, in a few words: the agent, an import, a compaction."""
    source = meta.get("source")
    if source == "import":
        return f"import {meta.get('format')}: {Path(str(meta.get('file'))).name}"
    if source == "compact":
        return f"compact {meta.get('policy_name')} of {meta.get('of')}"
    return str(source or "agent")


def summary(store: Any, meta: dict[str, Any]) -> dict[str, Any]:
    """One session's line: when it started, its turns, its view's tokens, its compactions."""
    sid = meta["id"]
    turns = compactions = messages = 0
    for record in store.records(sid):
        kind = record.get("kind")
        if kind == "message":
            messages += 1
            turns += record["message"].get("role") == "assistant"
        elif kind == "event":
            compactions += record.get("stage") in COMPACTIONS
    return {
        "id": sid,
        "started": meta.get("created"),
        "source": source_of(meta),
        "engine": meta.get("engine"),
        "messages": messages,
        "turns": turns,
        "tokens_in_view": resumed(store, sid).measure(),
        "compactions": compactions,
    }


workdir_option = click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Work directory whose sessions to use (default: the current one).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


@click.command("sessions")
@workdir_option
@json_option
def sessions(workdir: Path | None, as_json: bool) -> None:
    """List the sessions of a work directory, newest first."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from .damage import BROKEN, problem

    store = open_store(workdir)
    rows, damaged = [], []
    try:
        for meta in store.list_sessions():
            try:
                rows.append(summary(store, meta))
            except BROKEN as error:  # one damaged session: named, the others still listed
                damaged.append({"id": meta["id"], "problem": problem(error)})
    finally:
        store.close()
    for bad in damaged:
        click.echo(f"error: session {bad['id']} cannot be read: {bad['problem']}", err=True)
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    table = Table(
        title="sessions, newest first",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 1, 0, 0),
    )
    for name in ("id", "started", "source", "turns", "in view", "compactions"):
        right = name in ("turns", "in view", "compactions")
        table.add_column(
            name,
            justify="right" if right else "left",
            no_wrap=True,
            overflow="ellipsis",
            max_width=20 if name == "source" else None,
        )
    for row in rows:
        tokens = row["tokens_in_view"]
        table.add_row(
            row["id"],
            str(row["started"] or "")[5:16].replace("T", " "),
            row["source"],
            f"{row['turns']:,}",
            "-" if tokens is None else f"{tokens:,}",
            f"{row['compactions']:,}",
        )
    Console().print(table)
    click.echo("started: UTC; in view: tokens the session's next request would carry")


@click.command("recall")
@click.argument("session")
@click.argument("query")
@workdir_option
@click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--limit", type=click.IntRange(min=1), default=8_000, show_default=True)
@json_option
def recall_command(
    session: str, query: str, workdir: Path | None, offset: int, limit: int, as_json: bool
) -> None:
    """Print the original content SESSION logged that matches QUERY (text, a path the
    session's view named, or 'message N'), one page at a time."""
    from ..session.recall import recall

    store = open_store(workdir)
    try:
        need_session(store, session)
        try:
            page = recall(store, session, query, offset=offset, limit=limit)
        except ValueError as error:
            raise click.UsageError(str(error)) from error
    finally:
        store.close()
    if as_json:
        data = {
            "query": page.query,
            "hits": page.hits,
            "offset": page.offset,
            "total": page.total,
            "next_offset": page.next_offset,
            "text": page.text,
        }
        click.echo(json.dumps(data, indent=1, ensure_ascii=False))
    else:
        click.echo(str(page))


__all__ = [
    "json_option",
    "need_session",
    "open_store",
    "recall_command",
    "sessions",
    "source_of",
    "summary",
    "workdir_option",
]
