"""``context-compact inspect ID``: what compaction did to a session, turn by turn
(``session/inspect.py`` replays it), and ``pass_lines``, one compaction as text."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import click

from ..session.inspect import Event, render_chart, timeline
from .sessions import json_option, need_session, open_store, workdir_option
from .store_errors import guards_store


@click.command("inspect")
@click.argument("session")
@workdir_option
@json_option
@click.option(
    "--width",
    type=click.IntRange(min=40),
    default=80,
    show_default=True,
    help="Columns of the output: the chart of view tokens per turn and every line.",
)
@guards_store
def inspect_command(session: str, workdir: Path | None, as_json: bool, width: int) -> None:
    """What compaction did to SESSION: a timeline of its compactions (turn, view tokens,
    event, tokens saved, where the copy went) and a chart of view tokens per turn."""
    store = open_store(workdir)
    try:
        need_session(store, session)
        line = timeline(store, session)
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps(line.as_dict(), indent=1))
        return
    peak = max(line.view_tokens, default=0)
    at = line.view_tokens.index(peak) + 1 if line.view_tokens else 0
    limit = f", limit {line.limit:,}" if line.limit else ""
    for text in (
        f"session {session}: {line.messages:,} messages, {line.turns:,} turns, "
        f"{len(line.events)} compaction events",
        f"view tokens: largest request {peak:,} (turn {at}), view now {line.now:,} "
        f"(with the messages since){limit}",
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
        return
    _print_events(line.events, width)


def fill(text: str, width: int, indent: str = "", first: str | None = None) -> str:
    """``text`` wrapped at word boundaries in ``width`` columns (a word longer than a line,
    a path say, stays whole on its own line)."""
    return textwrap.fill(
        text,
        width=width,
        initial_indent=indent if first is None else first,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def pass_lines(
    turn: int,
    stage: str,
    before: int,
    after: int,
    note: str,
    paths: list[str],
    width: int = 80,
) -> list[str]:
    """One compaction as text in ``width`` columns: the numbers on one line, what it did and
    where the full copy went on the next ones (a path is never shortened: it is what the
    model reads back)."""
    lines = [f"  turn {turn:>4}  {stage:<20} {before:>8,} -> {after:>8,} (-{before - after:,})"]
    if note:
        lines += fill(note, width, "      ").splitlines()
    if paths:
        more = f"(+{len(paths) - 1} more)" if len(paths) > 1 else ""
        lines += fill(f"{paths[0]} {more}".rstrip(), width, "          ", "    copy: ").splitlines()
    return lines


def _print_events(events: list[Event], width: int) -> None:
    click.echo(fill("compactions (turn, event, view tokens before -> after, saved):", width))
    for e in events:
        for text in pass_lines(e.turn, e.stage, e.before, e.after, e.note, e.paths, width):
            click.echo(text)


__all__ = ["fill", "inspect_command", "pass_lines"]
