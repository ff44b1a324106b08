"""``context-compact inspect ID``: what compaction did to a session, turn by turn
(``history/inspect.py`` replays it and writes one compaction as text, ``pass_lines``)."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import click

from ..history.inspect import (
    Event,
    Thinking,
    after_last,
    fill,
    pass_lines,
    render_chart,
    timeline,
)
from ..session.policy import assumed_note
from .damage import readable
from .outcome import dumps
from .sessions import json_option, need_session, open_store, workdir_option
from .store_errors import guards_store


@click.command("inspect")
@click.argument("session")
@workdir_option
@json_option
@click.option(
    "--width",
    type=click.IntRange(min=40),
    default=None,
    help="Columns of the output: the chart of view tokens per turn and every line "
    "(default: the terminal's width, or COLUMNS; 80 when neither says; at least 40).",
)
@click.option("--serve", is_flag=True, help="Show it as a page on 127.0.0.1 instead.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="Port of the page with --serve.",
)
@click.option("--html", type=click.Path(dir_okay=False, path_type=Path), help="Write the page.")
@guards_store
def inspect_command(
    session: str,
    workdir: Path | None,
    as_json: bool,
    width: int | None,
    serve: bool,
    port: int,
    html: Path | None,
) -> None:
    """What compaction did to SESSION: a timeline of its compactions (turn, view tokens,
    event, tokens saved, where the copy went) and a chart of view tokens per turn; with
    --serve a page in the browser, with --html FILE the same page as one file."""
    # The terminal's width (COLUMNS first), as the other tables: at least 40 columns.
    width = width or max(40, shutil.get_terminal_size().columns)
    if serve or html is not None:
        from .inspector import inspect_page

        inspect_page(workdir, session, serve, port, html)
        return
    store = open_store(workdir)
    try:
        session = need_session(store, session).id
        with readable(session, store):
            line = timeline(store, session)
    finally:
        store.close()
    if as_json:
        click.echo(dumps(line.as_dict(), indent=1))
        return
    peak = max(line.view_tokens, default=0)
    at = line.view_tokens.index(peak) + 1 if line.view_tokens else 0
    limit = f", limit {line.limit:,}" if line.limit else ""
    if line.window is not None:
        limit += f" (the server's window: {line.window:,})"
    elif line.assumed is not None and line.limit:
        limit += f" (resting on {assumed_note(line.assumed)})"
    for text in (
        f"session {session}: {line.messages:,} messages, {line.turns:,} turns, "
        f"{len(line.events)} compaction events",
        f"view tokens: largest request {peak:,} (turn {at}), view now {line.now:,} "
        f"(with the messages since){limit}",
        *_thinking_lines(line.thinking),
    ):
        click.echo(fill(text, width))
    click.echo("")
    for text in render_chart(
        line.view_tokens, width, limit=line.limit, marks={e.turn for e in line.events}
    ):
        click.echo(text)
    click.echo("")
    if not line.events:
        click.echo("no compaction events: the whole history is in view")
    else:
        _print_events(line.events, width, line.turns)
    if line.ledger_lines and (line.ledger["files_changed"] or line.ledger["commands_run"]):
        click.echo("")
        click.echo("ledger (what the agent did, from the tool calls logged):")
        for text in line.ledger_lines:
            # A path longer than the width is broken too: these are the agent's paths, not
            # the store's, and need not be copied from here.
            click.echo(
                textwrap.fill(text, max(20, width), initial_indent="  ", subsequent_indent="    ")
            )


def _thinking_lines(thinking: Thinking) -> list[str]:
    """What compaction did to the replies' thinking, when there was any to strip."""
    if not thinking.strips:
        return []
    share = thinking.kept_share
    kept = f"; {share:.0%} of replies kept their thinking in the next request" if share else ""
    return [
        f"thinking: {thinking.produced:,} blocks in the replies, {thinking.stripped:,} taken "
        f"out of the view by {thinking.strips:,} strips (the model checks their prefix){kept}"
    ]


def _print_events(events: list[Event], width: int, turns: int) -> None:
    click.echo(fill("compactions (turn, event, view tokens before -> after, saved):", width))
    legend = after_last(turns, [e.turn for e in events])
    if legend:
        click.echo(fill(legend, width))
    for e in events:
        lines = pass_lines(
            e.turn, e.stage, e.before, e.after, e.note, e.paths, width, e.timing, e.undone
        )
        for text in lines:
            click.echo(text)


__all__ = ["inspect_command"]
