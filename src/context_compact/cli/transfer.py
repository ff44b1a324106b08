"""``context-compact import`` and ``context-compact export``: sessions in and out of a work
directory (``session/transfer.py`` does the work)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from ..loaders import Limits, describe
from ..session.transfer import (
    EXPORT_FORMATS,
    LOAD_ERRORS,
    conversations,
    export_session,
    import_path,
    quiet_loaders,
)
from .damage import readable
from .sessions import json_option, need_session, open_store, workdir_option


@click.command("import")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@workdir_option
@json_option
@click.option(
    "--max-line-bytes",
    type=click.IntRange(min=1),
    default=Limits.line_bytes,
    show_default=True,
    help="Refuse a file with a JSON Lines line longer than this (read no further).",
)
@click.option(
    "--max-file-bytes",
    type=click.IntRange(min=1),
    default=Limits.file_bytes,
    show_default=True,
    help="Refuse a file larger than this.",
)
def import_command(
    path: Path, workdir: Path | None, as_json: bool, max_line_bytes: int, max_file_bytes: int
) -> None:
    """Import an agent's log (FILE, or every log under DIR) as new sessions.

    Formats (detected): Claude Code session JSONL, Codex rollout JSONL, SWE-agent .traj,
    OpenHands event histories, mini-swe-agent and OpenAI chat JSON, Anthropic messages JSON.
    """
    from ..store import CorruptStore
    from ..store.url import cli_store

    try:
        store = cli_store(Path(workdir or Path.cwd()).resolve())
    except CorruptStore as error:
        raise click.ClickException(str(error)) from None
    try:
        try:
            with quiet_loaders():
                limits = Limits(max_line_bytes, max_file_bytes)
                imported, failures = import_path(store, path, limits)
        except LOAD_ERRORS as error:
            raise click.ClickException(f"cannot import {path}: {describe(error, path)}") from None
    finally:
        store.close()
    if as_json:
        data = {
            "sessions": [i.as_dict() for i in imported],
            "failures": [asdict(f) for f in failures],
        }
        click.echo(json.dumps(data, indent=1))
    else:
        for i in imported:
            skipped = ""
            if i.skipped:
                reasons = ", ".join(f"{k}={v}" for k, v in i.notes.items())
                if i.bad_lines:
                    more = "…" if i.notes.get("unparseable_line", 0) > len(i.bad_lines) else ""
                    reasons += f"; not JSON: line {', '.join(map(str, i.bad_lines))}{more}"
                skipped = f"; {i.skipped} skipped or repaired ({reasons})"
            click.echo(
                f"imported {i.id}: {i.format} {i.name}, {i.messages} messages, "
                f"{i.tool_uses} tool calls{skipped}"
            )
        for f in failures:
            click.echo(f"error: {f.path}: {f.reason}", err=True)
    if failures:
        raise SystemExit(1)


@click.command("export")
@click.argument("session")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(EXPORT_FORMATS),
    default="jsonl",
    show_default=True,
    help="jsonl: one Anthropic message a line; anthropic: {system, messages}; openai: "
    "Chat Completions messages.",
)
@click.option("--view", is_flag=True, help="The compacted view instead of the whole history.")
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="File to write."
)
@workdir_option
def export_command(
    session: str, fmt: str, view: bool, output: Path | None, workdir: Path | None
) -> None:
    """Write session SESSION's history (its latest conversation) in FORMAT."""
    store = open_store(workdir)
    try:
        need_session(store, session)
        with readable(session):
            if not view:  # the journal must replay: a damaged one is refused, not exported
                from ..compactor import Compactor
                from ..policy import Policy

                Compactor(Policy.default(), store, session=session).view()
            text = export_session(store, session, fmt, view=view)
        earlier = conversations(store, session) - 1
    finally:
        store.close()
    if earlier:
        click.echo(f"note: {earlier} earlier conversation(s) not exported", err=True)
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="ascii")
        click.echo(f"wrote {output}", err=True)


__all__ = ["export_command", "import_command"]
