"""The ``context-compact`` command: a coding agent whose context never overflows.

    context-compact run "fix the failing test"     one task, the answer on stdout
    context-compact chat                           a REPL; /compact [focus] summarizes now
    context-compact demo                           offline: every kind of compaction, in seconds

Configuration comes from options, then the environment, then a ``.env`` file in the work
directory (the real environment wins): ``MODEL_ID``, ``ANTHROPIC_API_KEY``,
``ANTHROPIC_BASE_URL``, ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``. Policy settings
(thresholds, limits) come from options, then ``.context-compact/config.toml`` in the work
directory (``config.py``).

Nothing on stdout but the answer (``run``) or the answers (``chat``): ``run "x" >answer.txt``
keeps only the answer. On stderr: one dim line per tool call, one line per compaction (stage,
size before -> after, where the full copy went), refusals, notes, a spinner while the model
thinks (only on a terminal); ``--quiet`` silences them, ``--json`` prints the answer as JSON.
A failure is ONE line on stderr saying what failed and what to do, with the path of the
transcript holding the conversation so far; exit status 1 (2 for usage errors); the
traceback only with ``--debug``.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from ..agent.loop import (
    AgentError,
    describe_error,
)
from ..session.records import logged_messages
from ..store import WORKDIR_DB
from ..store.base import DeletesSessions
from ..version import package_version
from .agent import (
    QUIT_WORDS,
    RECOVERABLE,
    Printer,
    Session,
    ask,
    open_session,
    report_failure,
    resume_hint,
)
from .agent_options import agent_options
from .inspector import ui_command
from .oneline import OneLineGroup
from .outcome import dumps
from .sessions import recall_command, sessions
from .store_errors import guards_store, select_store


@click.group(cls=OneLineGroup)
@click.version_option(version=package_version(), prog_name="context-compact")
@click.option(
    "--store",
    metavar="URL",
    envvar="CC_STORE_URL",
    default=None,
    help="Where sessions live: sqlite:///PATH, file:///DIR, memory: or postgresql://HOST/DB "
    "(default: .context-compact/sessions.db in the work directory).",
)
def main(store: str | None) -> None:
    """A coding agent that keeps its context inside the window without losing anything."""
    select_store(store)


def wrapping(console: Console) -> Console:
    """On a terminal, lines wrap at word boundaries (the terminal itself would cut words);
    into a file or a pipe, each stays one line."""
    console.soft_wrap = not console.is_terminal
    return console


def progress_console(quiet: bool) -> Console:
    """Where progress goes: stderr, so that stdout holds nothing but the answer."""
    return wrapping(Console(stderr=True, quiet=quiet))


def print_answer(text: str) -> None:
    """The model's answer on stdout: wrapped at word boundaries on a terminal, as it is
    otherwise."""
    console = Console()
    if console.is_terminal:
        console.print(text, markup=False, highlight=False, soft_wrap=False)
    else:
        click.echo(text)


@main.command()
@click.argument("task")
@agent_options
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the answer as JSON: answer, session, turns, stopped_reason.",
)
@guards_store
def run(task: str, as_json: bool, **options: Any) -> None:
    """Run one TASK to the end and print the answer (only the answer goes to stdout)."""
    console = progress_console(options["quiet"])
    session = open_session(options, console)
    result = ask(session, session.compactor.view(), task)
    kept = session.compactor.session_id if session.compactor.keeps_log else None
    if not isinstance(result, AgentError) and result.stopped_reason == "max_turns":
        stopped = RuntimeError(f"stopped after {result.turns} turns before an answer")
        advice = "Raise --max-turns, or continue the task in chat."
        report_failure(session, stopped, result.history, advice)
    if isinstance(result, AgentError) or session.failure is not None:
        if as_json:  # the line said on stderr, as the object --json promises
            said = (session.failure or str(result)).removeprefix("error: ")
            click.echo(dumps({"error": said, "exit_code": 1, "session": kept}, indent=1))
        sys.exit(1)
    if as_json:
        data = {
            "answer": result.text,
            "session": kept,
            "turns": result.turns,
            "stopped_reason": result.stopped_reason,
        }
        click.echo(dumps(data, indent=1))
        return
    print_answer(result.text)


@main.command()
@agent_options
@guards_store
def chat(**options: Any) -> None:
    """Talk to the agent; history is kept across requests.

    Type q, exit, /quit or press Ctrl-D to quit; /compact [focus] summarizes the conversation
    now; /sessions lists the sessions; /help lists these commands (none goes to the model).
    The answers go to stdout, progress and notes to stderr. The exit status is 1 when any
    request failed.
    """
    console = progress_console(options["quiet"])
    session = open_session(options, console)
    history: list[Any] = session.compactor.view()
    last_request = ""
    failed = False
    console.print(
        r"[dim]context-compact chat: q to quit, /compact \[focus] to summarize now, "
        "/help for the rest[/]"
    )
    if options["resume"] is not None and session.compactor.keeps_log:
        console.print(f"[dim]{resume_hint(session)}[/]", markup=True, highlight=False)
    for line in _lines():
        query = line.strip()
        if not query:
            continue
        if query.lower() in QUIT_WORDS:
            break
        word, _, rest = query.partition(" ")
        if SLASH_COMMAND.fullmatch(word):
            if word == "/quit":
                break
            if word == "/compact":
                history, ok = compact_now(session, history, last_request, rest)
                failed |= not ok
            else:
                slash_command(session, word)
            continue
        query = query.removeprefix("/") if query.startswith("//") else query
        last_request = query
        result = ask(session, history, query)
        history = result.history
        if isinstance(result, AgentError):
            failed = True
            continue
        print_answer(result.text)
        if result.stopped_reason == "max_turns":
            console.print(f"[yellow]stopped after {result.turns} turns (--max-turns)[/]")
    # A new session is said saved only once it is, when something was asked (a failure's
    # line said it already).
    kept = options["resume"] is None and not _drop_if_empty(session)
    if kept and not failed and session.compactor.keeps_log:
        console.print(f"[dim]{resume_hint(session)}[/]", markup=True, highlight=False)
    sys.exit(1 if failed else 0)


def _drop_if_empty(session: Session) -> bool:
    """A chat quit before its first request leaves no session behind; whether it was one."""
    compactor, store = session.compactor, session.store
    if not compactor.keeps_log or not isinstance(store, DeletesSessions):
        return False
    sid = compactor.session_id
    if sid is None or any(True for _ in logged_messages(store.records(sid))):
        return False
    store.delete_session(sid)
    session.printer.console.print("[dim]nothing asked: the session was not kept[/]")
    return True


# A line whose first word is one of these is chat's own, never sent to the model; "//..." sends
# a line that starts with "/" (a path is not a command word: it has another "/" in it).
SLASH_COMMAND = re.compile(r"/[A-Za-z]+")
CHAT_HELP = """\
chat's own commands (never sent to the model):
  /help              this list
  /quit              quit (so do q, exit and Ctrl-D; the session is saved)
  /compact [focus]   summarize the conversation now, keeping what FOCUS names
  /sessions          the sessions of this work directory, this one among them
  //text             send "/text" to the model"""


def slash_command(session: Session, word: str) -> None:
    """``/help``, ``/sessions``, or a word chat does not know: answered here, on stderr."""
    out = session.printer.console
    if word == "/help":
        out.print(CHAT_HELP, markup=False, highlight=False)
    elif word == "/sessions":
        from ..store.meta import sessions_of
        from .sessions import summary, table_lines

        store = session.store
        rows = [summary(store, meta) for meta in sessions_of(store)]
        for text in table_lines(rows, out.width, wide=False):
            out.print(text, markup=False, highlight=False)
        if session.compactor.keeps_log:
            out.print(f"this chat: session {session.compactor.session_id}", highlight=False)
    else:
        out.print(
            f"unknown command {word}: /help lists them (//... sends a line starting with / "
            "to the model)",
            markup=False,
            highlight=False,
        )


def _lines() -> Iterator[str]:
    interrupted = False
    while True:
        try:
            # The prompt only for a person: piped input gets none on stdout (the answers').
            line = input("> " if sys.stdin.isatty() else "")
        except EOFError:
            return
        except KeyboardInterrupt:
            if interrupted:  # a second Ctrl-C in a row quits
                return
            interrupted = True
            click.echo("\n(Ctrl-C again, q or Ctrl-D quits; the session is saved)", err=True)
            continue
        interrupted = False
        yield line


def compact_now(
    session: Session, history: list[Any], request: str, focus: str
) -> tuple[list[Any], bool]:
    """S-6.5's ``/compact [focus]``: summarize the conversation now."""
    if not history:
        session.printer.console.print("[dim]nothing to compact yet[/]")
        return history, True
    before = len(session.compactor.events)
    try:
        history = session.compactor.compact_history(
            history, request, instructions=focus.strip() or None
        )
    except RECOVERABLE as error:
        report_failure(session, error, history)
        return history, False
    except KeyboardInterrupt:
        session.printer.console.print(
            "[dim]compaction interrupted; the conversation is as it was[/]"
        )
        return history, True
    if len(session.compactor.events) == before:
        session.printer.console.print("[dim]nothing to compact yet[/]")
    return history, True


@main.command()
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Empty or new directory for the sample project (default: a temporary one).",
)
@click.option(
    "--clean", is_flag=True, help="Remove the temporary workspace afterwards (default: keep it)."
)
def demo(workdir: Path | None, clean: bool) -> None:
    """Offline: a scripted model drives the real loop through every kind of compaction."""
    from ..demo import DEMO_CONTEXT_LIMIT, DEMO_TASK, run_demo

    if workdir is not None and workdir.exists() and any(workdir.iterdir()):
        raise click.UsageError(f"{workdir} is not empty; demo needs an empty or new directory")
    temporary = workdir is None
    root = Path(tempfile.mkdtemp(prefix="context-compact-demo-")) if workdir is None else workdir
    root = root.resolve()
    console = wrapping(Console())
    console.print(
        "[bold]context-compact demo[/]: scripted model (offline), real tools, a real SQLite "
        f"session store, default policy at a {DEMO_CONTEXT_LIMIT:,}-token limit"
    )
    console.print(f"workspace: {root}", highlight=False)
    console.print(f"task: {DEMO_TASK}\n", highlight=False)
    printer = Printer(console, root, show_turns=True)
    try:
        with _removed_if(temporary and clean, root):
            outcome = run_demo(root, on_event=printer)
            console.print("\n[bold]answer[/]")
            console.print(outcome.result.text, markup=False, highlight=False)
            console.print(f"\n[bold]artifacts[/] in {root}", highlight=False)
            console.print(f"  .transcripts/                {len(outcome.transcripts)} files")
            console.print(f"  .task_outputs/tool-results/  {len(outcome.tool_results)} files")
            console.print(
                f"  {WORKDIR_DB}   session {outcome.session}: {outcome.logged} messages "
                f"logged, the view sent last holds {outcome.in_view}",
                highlight=False,
            )
            console.print(
                f"  recall({outcome.recalled[0]!r}) finds it in {outcome.recalled[1]} logged "
                "message(s), compacted or not",
                highlight=False,
            )
            console.print(
                f"{outcome.result.turns} turns, {outcome.model_calls} model calls, "
                f"{outcome.refusals} refusal(s) recovered, {printer.compactions} compaction "
                f"events; app/tax.py {'fixed' if outcome.fixed else 'NOT fixed'}"
            )
            if temporary and clean:
                console.print("[dim](temporary workspace removed)[/]")
            else:
                console.print(f"[dim](look around: ls -a {root}; --clean removes it)[/]")
    except (AgentError, OSError) as error:
        click.echo(f"error: the demo failed: {describe_error(error)}", err=True)
        sys.exit(1)


@contextmanager
def _removed_if(remove: bool, root: Path) -> Iterator[None]:
    try:
        yield
    finally:
        if remove:
            shutil.rmtree(root, ignore_errors=True)


# -- more commands -----------------------------------------------------------------------
from .check_model import check_model_command  # noqa: E402
from .compact import compact_command  # noqa: E402
from .doctor import doctor_command  # noqa: E402
from .inspect import inspect_command  # noqa: E402
from .transfer import export_command, import_command  # noqa: E402
from .undo import undo_command  # noqa: E402

main.add_command(sessions)
main.add_command(doctor_command)
main.add_command(recall_command)
main.add_command(import_command)
main.add_command(export_command)
main.add_command(inspect_command)
main.add_command(compact_command)
main.add_command(undo_command)
main.add_command(check_model_command)
main.add_command(ui_command)
