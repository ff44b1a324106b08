"""``context-compact import`` and ``context-compact export``: sessions in and out of a work
directory (``session/transfer.py`` does the work).

Import is idempotent by content: each session's meta holds a digest of what was imported
(format, system prompt, messages), and a log whose digest a session of the store already has
is that session again (reported as already imported), whatever the file is called now.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from ..history.transfer import (
    EXPORT_FORMATS,
    LOAD_ERRORS,
    Imported,
    conversations,
    export_session,
    import_session,
    quiet_loaders,
    report_of,
)
from ..invariants import ensure_valid
from ..loaders import EXTENSIONS, Failure, Limits, Session, candidates, describe, load_file
from ..store.base import Store
from ..store.meta import sessions_of
from .damage import readable
from .outcome import dumps
from .sessions import json_option, need_session, open_store, workdir_option
from .store_errors import guards_store


def digest(session: Session) -> str:
    """What makes two imports the same: the format, the system prompt and the messages."""
    text = json.dumps(
        [session.format, session.system, session.messages],
        sort_keys=True,
        ensure_ascii=True,
        default=str,
    )
    return hashlib.sha256(text.encode("ascii")).hexdigest()


Done = tuple[Imported, bool, dict[str, int]]


def import_target(
    store: Store, path: Path, limits: Limits | None = None
) -> tuple[list[Done], list[Failure], int]:
    """Import a file, or every log under a directory: each session with whether it was
    there already and what was kept in another form (``Session.converted``), the files that
    could not be read, and how many files were tried. A single file that cannot be read
    raises."""
    known = {m.content: m.id for m in sessions_of(store) if m.content}
    files = candidates(path) if path.is_dir() else [path]
    done: list[Done] = []
    failures: list[Failure] = []
    for file in files:
        try:
            loaded = load_file(file, limits)
            for session in loaded:  # a file with one bad trajectory imports none of them
                ensure_valid(session.messages)
        except LOAD_ERRORS as error:
            if not path.is_dir():
                raise
            failures.append(Failure(str(file), describe(error, file)))
            continue
        for session in loaded:
            key = digest(session)
            converted = dict(session.converted)
            if key in known:
                done.append((report_of(session, known[key]), True, converted))
                continue
            report = import_session(store, session, {"content": key, "converted": converted})
            known[key] = report.id
            done.append((report, False, converted))
    return done, failures, len(files)


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
@click.option(
    "--encoding",
    default="utf-8",
    show_default=True,
    help="Text encoding of the logs (latin-1, cp1252, ...). Bytes that are not text in it "
    "are refused, naming the file, byte and line; never replaced.",
)
@guards_store
def import_command(
    path: Path,
    workdir: Path | None,
    as_json: bool,
    max_line_bytes: int,
    max_file_bytes: int,
    encoding: str,
) -> None:
    """Import an agent's log (FILE, or every log under DIR) as sessions; a log imported
    before is the same session again (by content), not a copy.

    Formats (detected): Claude Code session JSONL, Codex rollout JSONL, SWE-agent .traj,
    OpenHands event histories (V0 output files, V1 event files and events folders),
    mini-swe-agent and OpenAI chat JSON, Anthropic messages JSON, aider's
    .aider.chat.history.md, benchmark results lists of message lists (tau-bench).
    """
    from ..store import CorruptStore
    from .store_choice import cli_store

    try:
        limits = Limits(max_line_bytes, max_file_bytes, encoding)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="'--encoding'") from None
    try:
        store = cli_store(Path(workdir or Path.cwd()).resolve())
    except CorruptStore as error:
        raise click.ClickException(str(error)) from None
    try:
        try:
            with quiet_loaders():
                done, failures, tried = import_target(store, path, limits)
        except LOAD_ERRORS as error:
            raise click.ClickException(f"cannot import {path}: {describe(error, path)}") from None
    finally:
        store.close()
    if as_json:
        data: dict[str, Any] = {
            "sessions": [
                {**i.as_dict(), "converted": converted, "already_imported": again}
                for i, again, converted in done
            ],
            "failures": [asdict(f) for f in failures],
        }
        click.echo(dumps(data, indent=1))
    else:
        for i, again, converted in done:
            click.echo(_line(i, again, converted))
        for f in failures:
            click.echo(f"error: {f.path}: {f.reason}", err=True)
    if not tried:
        raise click.ClickException(
            f"no agent logs under {path}: no {', '.join(f'*{e}' for e in EXTENSIONS)} file, "
            ".aider.chat.history.md or OpenHands events folder outside hidden folders; give a "
            "log file or the folder holding the logs"
        )
    if failures:
        raise SystemExit(1)


def _line(i: Imported, again: bool, converted: dict[str, int]) -> str:
    skipped = ""
    if i.skipped:
        reasons = ", ".join(f"{k}={v}" for k, v in i.notes.items())
        if i.bad_lines:
            more = "…" if i.notes.get("unparseable_line", 0) > len(i.bad_lines) else ""
            reasons += f"; not JSON: line {', '.join(map(str, i.bad_lines))}{more}"
        skipped = f"; {i.skipped} skipped or repaired ({reasons})"
    if converted:
        kinds = ", ".join(f"{k}={v}" for k, v in converted.items())
        skipped += f"; {sum(converted.values())} kept in another form ({kinds})"
    if i.encoding != Limits.encoding:
        skipped += f"; decoded as {i.encoding}"
    what = f"already imported as {i.id} (same content)" if again else f"imported {i.id}"
    return f"{what}: {i.format} {i.name}, {i.messages} messages, {i.tool_uses} tool calls{skipped}"


def exported(store: Store, session: str, fmt: str, view: bool) -> tuple[str, int]:
    """The session in ``fmt``, and how many tool calls at its end got the error result a
    resume gives calls that never ran (``agent.loop.not_run``): an API format is a request,
    and a request may not end in unanswered calls. ``jsonl`` stays the log as it is."""
    if fmt in ("jsonl", "ledger"):
        return export_session(store, session, fmt, view=view), 0
    from ..agent.loop import not_run

    document = json.loads(export_session(store, session, "anthropic", view=view))
    messages = document["messages"]
    answered = 0
    if messages and messages[-1]["role"] == "assistant":
        results = not_run(messages[-1])
        answered = len(results["content"])
        if answered:
            messages.append(results)
    if not answered:
        return export_session(store, session, fmt, view=view), 0
    if fmt == "anthropic":
        return json.dumps(document, ensure_ascii=True, indent=1) + "\n", answered
    from ..providers.openai_chat import to_openai

    openai = to_openai(messages, document.get("system") or "")
    return json.dumps(openai, ensure_ascii=True, indent=1) + "\n", answered


@click.command("export")
@click.argument("session")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(EXPORT_FORMATS),
    default="jsonl",
    show_default=True,
    help="jsonl: one Anthropic message a line; anthropic: {system, messages}; openai: "
    "Chat Completions messages; ledger: what the agent did (files changed and read, "
    "commands, the last test run, open errors) as JSON.",
)
@click.option("--view", is_flag=True, help="The compacted view instead of the whole history.")
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="File to write."
)
@workdir_option
@json_option
@guards_store
def export_command(
    session: str, fmt: str, view: bool, output: Path | None, workdir: Path | None, as_json: bool
) -> None:
    """Write session SESSION's history (its latest conversation) in FORMAT. A new -o file is
    readable by its owner only (0600). With --json: what was exported as JSON (session,
    format, file or the text itself, notes)."""
    store = open_store(workdir)
    try:
        session = need_session(store, session).id
        with readable(session, store):
            if not view:  # the journal must replay: a damaged one is refused, not exported
                from ..compactor import Compactor
                from ..policy import Policy

                Compactor(Policy.default(), store, session=session).view()
            text, answered = exported(store, session, fmt, view)
        earlier = conversations(store, session) - 1
    finally:
        store.close()
    notes = []
    if earlier:
        notes.append(f"{earlier} earlier conversation(s) not exported")
    if answered:
        notes.append(
            f"{answered} tool call(s) at the end never got a result; they get the error "
            "result a resume gives them, so the request is valid"
        )
    if output is not None:
        write_private(output, text)
    if as_json:
        data: dict[str, Any] = {
            "session": session,
            "format": fmt,
            "view": view,
            "output": None if output is None else str(output),
            "bytes": len(text.encode("ascii")),
            "notes": notes,
        }
        if output is None:
            data["text"] = text
        click.echo(dumps(data, indent=1))
        return
    for note in notes:
        click.echo(f"note: {note}", err=True)
    if output is None:
        click.echo(text, nl=False)
    else:
        click.echo(f"wrote {output}", err=True)


def write_private(output: Path, text: str) -> None:
    """``text`` into ``output``, created readable by its owner only (an existing file keeps
    its mode); a path that cannot be written is one line saying what to do."""
    try:
        fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(text)
    except OSError as error:
        where = output.parent if isinstance(error, FileNotFoundError) else output
        advice = (
            f"create {where} first, or choose another -o path"
            if isinstance(error, FileNotFoundError)
            else "choose another -o path"
        )
        raise click.ClickException(
            f"cannot write {output}: {error.strerror or error}; {advice}"
        ) from None


__all__ = ["digest", "export_command", "import_command", "import_target"]
