"""Sessions in and out: ``import`` an agent's log as a session, ``export`` a session's history.

``import_file(store, path)`` reads a log in any format ``context_compact.loaders`` knows
(the format is detected from the content) and writes each trajectory in it as a new session
of the default engine: its messages logged as they are, nothing compacted, so ``view()`` is
the whole history and ``inspect``, ``recall``, ``compact`` and ``--resume`` work on it like on
a session the agent ran. The session's meta says where it came from (``source``,
``format``, ``file``, ``name``), holds the log's system prompt (``system``) and what the
loader had to skip or repair (``notes``: never silent).

``export_session(store, id, fmt)`` writes a session's history (its latest conversation,
complete: the log, not the compacted view, unless ``view=True``):

* ``jsonl``: one Anthropic message per line, the system prompt first as a ``system`` line;
* ``anthropic``: one JSON object ``{"system": ..., "messages": [...]}``;
* ``openai``: a JSON list of Chat Completions messages (``providers.openai_chat.to_openai``).

Each of them imports again (formats ``anthropic`` and ``openai_chat``) to the same messages
and tool pairs; ``jsonl`` and ``anthropic`` to the same messages exactly. JSON is written
ASCII-only (escapes), so text that is not valid UTF-8 (a lone surrogate in tool output)
survives the trip.

``import_command`` and ``export_command`` are the CLI's ``import`` and ``export``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import click

from ..loaders import Failure, Session, candidates, describe, load_file
from ..store.base import Store
from .command import json_option, need_session, open_store, workdir_option

EXPORT_FORMATS = ("jsonl", "anthropic", "openai")
LOAD_ERRORS = (ValueError, OSError, UnicodeError, IndexError)


@dataclass(frozen=True)
class Imported:
    """One session written by ``import``."""

    id: str
    file: str
    name: str
    format: str
    messages: int
    tool_uses: int
    skipped: int
    notes: dict[str, int] = field(default_factory=dict)
    bad_lines: list[int] = field(default_factory=list)
    """Line numbers (1-based) of the JSON Lines that did not parse, the first ``SHOWN``."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@contextmanager
def quiet_loaders() -> Iterator[None]:
    """The loaders log each repair they make; a command reports them itself."""
    log = logging.getLogger("context_compact.loaders")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def import_session(store: Store, session: Session, extra: dict[str, Any] | None = None) -> Imported:
    """Write one loaded trajectory as a new session (``extra`` added to its meta); its
    record."""
    from ..compactor import Compactor
    from ..policy import Policy

    policy = Policy.default()
    meta = {
        "engine": "default",
        "policy": asdict(policy),
        "source": "import",
        "format": session.format,
        "file": str(Path(session.source).resolve()),
        "name": session.name,
        "system": session.system,
        "notes": dict(session.notes),
        **(extra or {}),
    }
    sid = store.create_session(meta)
    compactor = Compactor(policy, store, session=sid)
    if session.messages:
        compactor.record(session.messages)
    uses = sum(
        1
        for message in session.messages
        for block in message["content"]
        if block.get("type") == "tool_use"
    )
    return Imported(
        sid,
        session.source,
        session.name,
        session.format,
        len(session.messages),
        uses,
        session.skipped,
        dict(session.notes),
        unparseable_lines(Path(session.source)) if session.notes.get("unparseable_line") else [],
    )


SHOWN = 20


def unparseable_lines(path: Path, limit: int = SHOWN) -> list[int]:
    """The 1-based numbers of the non-blank lines of ``path`` that are not JSON (the first
    ``limit``), so an import can say where its skipped lines are."""
    found: list[int] = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                json.loads(line)
            except json.JSONDecodeError:
                found.append(number)
                if len(found) == limit:
                    break
    return found


def import_path(store: Store, path: Path) -> tuple[list[Imported], list[Failure]]:
    """Import a file, or every log under a directory; the sessions made and the files that
    could not be read (path and reason). A single file that cannot be read raises."""
    if not path.is_dir():
        return [import_session(store, s) for s in load_file(path)], []
    imported: list[Imported] = []
    failures: list[Failure] = []
    for file in candidates(path):
        try:
            sessions = load_file(file)
        except LOAD_ERRORS as error:
            failures.append(Failure(str(file), describe(error, file)))
            continue
        imported.extend(import_session(store, s) for s in sessions)
    return imported, failures


def history(store: Store, session: str) -> list[dict[str, Any]]:
    """The messages of the session's latest conversation, as they were logged."""
    messages: list[dict[str, Any]] = []
    for record in store.records(session):
        kind = record.get("kind")
        if kind == "message":
            messages.append(record["message"])
        elif kind == "restart":
            messages = []
    return messages


def conversations(store: Store, session: str) -> int:
    """How many conversations the session's log holds (a restart starts one)."""
    return 1 + sum(1 for r in store.records(session) if r.get("kind") == "restart")


def export_session(store: Store, session: str, fmt: str, view: bool = False) -> str:
    """The session's history in ``fmt`` (one of ``EXPORT_FORMATS``), as text."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; known: {', '.join(EXPORT_FORMATS)}")
    meta = store.session_meta(session)
    if meta is None:
        raise KeyError(session)
    system = meta.get("system") or ""
    if view:
        from ..compactor import Compactor
        from ..policy import Policy

        messages = Compactor(Policy.default(), store, session=session).view()
    else:
        messages = history(store, session)
    if fmt == "jsonl":
        lines = [{"role": "system", "content": system}] if system else []
        lines += messages
        return "".join(json.dumps(m) + "\n" for m in lines)
    if fmt == "anthropic":
        document: dict[str, Any] = {"system": system} if system else {}
        document["messages"] = messages
        return json.dumps(document, ensure_ascii=True, indent=1) + "\n"
    from ..providers.openai_chat import to_openai

    return json.dumps(to_openai(messages, system), ensure_ascii=True, indent=1) + "\n"


@click.command("import")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@workdir_option
@json_option
def import_command(path: Path, workdir: Path | None, as_json: bool) -> None:
    """Import an agent's log (FILE, or every log under DIR) as new sessions.

    Formats (detected): Claude Code session JSONL, Codex rollout JSONL, SWE-agent .traj,
    OpenHands event histories, mini-swe-agent and OpenAI chat JSON, Anthropic messages JSON.
    """
    from ..store.url import cli_store

    store = cli_store(Path(workdir or Path.cwd()).resolve())
    try:
        try:
            with quiet_loaders():
                imported, failures = import_path(store, path)
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


__all__ = [
    "EXPORT_FORMATS",
    "Imported",
    "conversations",
    "export_command",
    "export_session",
    "history",
    "import_command",
    "import_path",
    "import_session",
    "quiet_loaders",
]
