"""How the CLI builds an agent and reports on it: the environment (options, then the real
environment, then ``.env``), the provider, the policy (with ``.context-compact/config.toml``),
the store and session to resume, the printer of loop events, and the one-line failure
messages. The ``cli`` package's ``__init__.py`` holds the click commands on top of it.

A failure shown to the user is ONE line saying what failed and what to do, with the path of
the transcript holding the conversation so far; secrets are redacted from it.
"""

from __future__ import annotations

import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from ..agent.guard import Redactor, secrets_in
from ..agent.loop import (
    Agent,
    AgentError,
    Compaction,
    LoopEvent,
    ModelCall,
    Refusal,
    RunResult,
    ToolCall,
    system_prompt,
)
from ..agent.tools import Workspace
from ..compactor import Compactor
from ..errors import CompactionFailed
from ..events import CompactionEvent
from ..invariants import InvalidHistory
from ..providers.base import ModelReply, Provider
from ..providers.errors import is_context_overflow
from ..sizing import text_tokens
from ..store import WORKDIR_DB, CorruptStore, SessionLocked, Store
from ..store.journal import shown_id
from ..summary.llm import LLMSummarizer
from .agent_config import configured_policy, environment, make_provider
from .agent_config import make_policy as make_policy
from .agent_config import read_dotenv as read_dotenv
from .store_choice import cli_store

# The Anthropic SDK refuses to start without a key; local stand-ins ignore it.
QUIT_WORDS = ("q", "exit", "quit")


# -- output ------------------------------------------------------------------------------


def shown_path(path: str, root: Path) -> str:
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return path


class Printer:
    """Renders loop events: dim tool lines, one line per compaction, refusals.

    Token figures are labeled by who counted them: a compaction's are the compactor's own
    (what ``inspect`` shows), a turn's ``tokens in`` the model's (its usage report), a
    refusal's the API's words. With ``show_turns``, a compaction names the turn whose request
    it shaped (the next one), as ``inspect`` numbers it."""

    def __init__(self, console: Console, root: Path, show_turns: bool = False) -> None:
        self.console = console
        self.root = root
        self.show_turns = show_turns
        self.compactions = 0
        self.turn = 0

    def __call__(self, event: LoopEvent) -> None:
        out = self.console
        if isinstance(event, ModelCall):
            self.turn = event.turn
            if self.show_turns:
                out.print(
                    f"[bold]turn {event.turn}[/]  [dim]{event.input_tokens:,} tokens in · "
                    f"{event.output_tokens:,} out (the model's count)[/]"
                )
            if event.tool_uses and event.text.strip():
                out.print(event.text.strip(), markup=False, highlight=False)
        elif isinstance(event, ToolCall):
            style = "red" if event.is_error else "dim"
            failed = " failed" if event.is_error else ""
            out.print(
                f"  → {event.name} {event.input_summary}  ({event.chars:,} chars{failed})",
                style=style,
                markup=False,
                highlight=False,
            )
        elif isinstance(event, Compaction):
            self.compactions += 1
            # The line holds a note such as "[auto compact]": text, not Rich markup.
            out.print(
                self.compaction_line(event.event), style="yellow", markup=False, highlight=False
            )
        elif isinstance(event, Refusal):
            then = "reactive compaction" if event.recovered else "giving up"
            if event.retry_max_tokens is not None:
                then = f"retrying with max_tokens {event.retry_max_tokens:,}"
            out.print(
                f"  ✗ API refused the prompt (its words: {event.error_text}) → {then}",
                style="magenta",
                markup=False,
                highlight=False,
            )

    def compaction_line(self, event: CompactionEvent) -> str:
        when = f"before turn {self.turn + 1}: " if self.show_turns else ""
        line = f"  ⟳ {when}{event.stage}: {event.before:,} → {event.after:,} {event.unit}"
        if event.note:
            line += f" ({event.note})"
        if event.paths:
            more = f" (+{len(event.paths) - 1} more)" if len(event.paths) > 1 else ""
            line += f"; full copy: {shown_path(event.paths[0], self.root)}{more}"
        return line


class Spinning:
    """A Provider that shows a spinner while its model call runs."""

    def __init__(self, provider: Provider, console: Console, doing: str) -> None:
        self.provider = provider
        self.console = console
        self.doing = doing
        self.name = provider.name
        self.model = provider.model

    def complete(self, **request: Any) -> ModelReply:
        with self.console.status(self.doing, spinner="dots"):
            return self.provider.complete(**request)


# -- one session -------------------------------------------------------------------------


@dataclass
class Session:
    agent: Agent
    compactor: Compactor
    store: Store
    printer: Printer
    debug: bool
    kind: str
    redact: Redactor = field(default_factory=Redactor)
    failure: str | None = None
    """The last failure's line as printed (``run --json`` repeats it as JSON)."""


def open_session(options: dict[str, Any], console: Console) -> Session:
    workdir = Path(options["workdir"] or Path.cwd()).resolve()
    env = environment(workdir)
    model = options["model"] or env.get("MODEL_ID")
    if not model:
        raise click.UsageError(
            "no model given: pass --model or set MODEL_ID (environment or .env in the work "
            "directory)"
        )
    provider = make_provider(options["provider"], model, env, options["max_retries"])
    notes: list[str] = []  # said once the session is open: a failure stays one line
    policy = configured_policy(options, model, workdir, note=notes.append)
    from ..store.postgres.base import ServerUnavailable

    try:
        store = cli_store(workdir)
    except (CorruptStore, ServerUnavailable) as error:
        raise click.ClickException(str(error)) from None
    resume = options.get("resume")
    if resume is not None and store.session_meta(resume) is None:
        from .sessions import by_prefix, newest

        meta = by_prefix(store, resume)
        if meta is None:
            known = newest(store, none="none yet")
            raise click.ClickException(
                f"no session {shown_id(resume)} in {workdir / WORKDIR_DB} (newest: {known})"
            )
        resume = meta.id  # the one session whose id starts with it
    if resume is not None:
        try:
            store.claim(resume)  # one writer per session: say so before any model call
        except SessionLocked as error:
            raise click.ClickException(str(error)) from None
    agent_side: Provider = provider
    summary_side: Provider = provider
    if console.is_terminal and not console.quiet:
        agent_side = Spinning(provider, console, "waiting for the model…")
        summary_side = Spinning(provider, console, "summarizing the conversation…")
    summarizer = LLMSummarizer(
        summary_side,
        input_limit=getattr(policy, "summary_input_limit", 80_000),
        max_tokens=getattr(policy, "summary_max_tokens", 2_000),
        # The agent's own provider: the summary continues its cached prefix.
        continue_cache=True,
    )
    # A local server counts exactly and knows its window: asked once, before the first turn.
    ask_counter = getattr(provider, "token_counter", None)
    counter = ask_counter(text_tokens) if callable(ask_counter) else None
    try:
        compactor = Compactor(policy, store, summarizer, session=resume, token_counter=counter)
    except ValueError as error:
        raise click.UsageError(f"--resume: {error}") from error
    ask_window = getattr(provider, "context_window", None)
    window = ask_window() if callable(ask_window) else None
    if window is not None:
        compactor.use_window(window.tokens, window.source)
    else:  # the server did not say its window: say what is assumed, if anything
        for text in notes:
            console.print(f"[yellow]note:[/] {text}", highlight=False)
    printer = Printer(console, workdir, show_turns=options["debug"])
    agent = Agent(
        agent_side,
        compactor,
        # API keys and tokens never reach the history through a tool's output.
        Workspace(workdir, read_roots=(Path(store.root),), secrets=secrets_in(env)),
        max_turns=options["max_turns"],
        on_event=printer,
        system=system_prompt(workdir),
    )
    return Session(
        agent,
        compactor,
        store,
        printer,
        options["debug"],
        options["provider"],
        Redactor(secrets_in(env)),
    )


def resume_hint(session: Session) -> str:
    """How to continue this session later ('' for engines that keep no log)."""
    if not session.compactor.keeps_log:
        return ""
    sid = session.compactor.session_id
    return f"Session {sid} is saved: continue it with --resume {sid}."


def hint(error: BaseException, kind: str) -> str:
    """What to do about a failure, judged from the error that caused it."""
    api = "ANTHROPIC" if kind == "anthropic" else "OPENAI"
    cause = error.__cause__ or error
    status = getattr(cause, "status_code", None)
    name = type(cause).__name__
    if isinstance(cause, CompactionFailed):
        return ""
    if is_context_overflow(cause):
        return "Start a new session, or lower --context-limit so compaction starts earlier."
    if status in (401, 403):
        return f"Check {api}_API_KEY and that the key may use this model."
    if status == 404:
        return f"Check --model and {api}_BASE_URL."
    if status == 429 or status == 529:
        return "The API is rate limited or overloaded; wait a little and run again."
    if "Connection" in name or "Timeout" in name:
        return f"Check {api}_BASE_URL and the network."
    return "Run again with --debug for the traceback."


def fail_line(what: str, advice: str, transcript: str | None) -> str:
    line = f"error: {what}"
    if not line.endswith("."):
        line += "."
    if advice:
        line += f" {advice}"
    if transcript:
        line += f" Conversation so far saved to {transcript}"
    return " ".join(line.split())


def report_failure(
    session: Session, error: BaseException, history: list[Any], advice: str | None = None
) -> None:
    """ONE line on stderr (what failed, what to do, where the conversation went)."""
    transcript = None
    if history:
        try:
            transcript = session.store.write_transcript(history)
        except OSError:
            transcript = None
    if session.debug:
        traceback.print_exception(error, file=sys.stderr)
    advice = hint(error, session.kind) if advice is None else advice
    line = fail_line(str(error), f"{advice} {resume_hint(session)}", transcript)
    session.failure = session.redact(line)
    click.echo(session.failure, err=True)


RECOVERABLE = (AgentError, CompactionFailed, InvalidHistory)


def ask(session: Session, history: list[Any], request: str) -> RunResult | AgentError:
    """Run one request; a failure is reported and returned (it carries the history)."""
    try:
        return session.agent.run(history, request)
    except AgentError as error:
        report_failure(session, error, error.history)
        return error
    except KeyboardInterrupt:
        # The engine logged the request and every turn that reached prepare: the conversation
        # goes on from there. Without a log, the interrupted request's turns are lost.
        compactor = session.compactor
        kept = compactor.view() if compactor.keeps_log else []
        kept = kept or [*history, {"role": "user", "content": request}]
        stopped = AgentError("interrupted", kept)
        report_failure(session, stopped, stopped.history, advice="")
        return stopped


# -- commands ----------------------------------------------------------------------------
