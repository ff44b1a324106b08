"""``context-compact compact ID|FILE --policy NAME [--dry-run]``: what a policy does to a
session, offline.

The session (a stored one, or a log file in any format the loaders read) is replayed turn by
turn through a ``Compactor`` of the policy, the way an agent loop would have driven it: the
history up to the model's first answer, then at every answer ``prepare(view + what the loop
appended, latest request)``, and one last ``prepare`` for the request that would come next.
Summaries are extractive (``summary.extractive_summary``): no model, no network,
deterministic. Any name of the registry works (``registry.NAMES``: our engines and the
bench's peers), at ``--context-limit`` if given.

What it reports, per compaction pass: the turn, the stage, the view's tokens before and
after, the tokens saved, what was persisted, cleared or summarized (the engine's note) and
where the full copies went; then the size of the final view against the uncompacted
history.

Decision on writing: ``--dry-run`` runs against a ``MemoryStore`` and writes nothing. Without
it, the result becomes a **new session** of the work directory's store (the source session is
never changed): under the default policy, the replayed session itself (its log, edits and
events, and the files its view names, under the work directory), so ``inspect``, ``recall``
and ``--resume`` work on it; under an engine that keeps no log (the seed, the peers), its
final view, logged as the new session's messages (what that engine kept; the source session
still holds everything). Its meta says ``source: compact``, the policy and the source.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import click

from ..events import CompactionEvent
from ..history.inspect import Event, after_last, fill, pass_lines, shown_path
from ..history.transfer import LOAD_ERRORS, history, quiet_loaders
from ..loaders import Session
from ..loaders.turns import turns
from ..messages import Message
from ..sizing import TokenCounter
from ..store.base import Store
from .outcome import dumps
from .policies import PolicyName, PolicyOption
from .sessions import json_option, need_session, workdir_option
from .store_errors import guards_store


@dataclass
class Outcome:
    source: str
    policy: str
    context_limit: int
    dry_run: bool
    uncompacted_tokens: int = 0
    view_tokens: list[int] = field(default_factory=list)
    passes: list[Event] = field(default_factory=list)
    final_view_tokens: int = 0
    final_view_messages: int = 0
    session: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def replay_policy(
    session: Session, policy: Any, store: Store, new_session: str | None = None
) -> tuple[Outcome, list[Message]]:
    """Drive ``policy`` through ``session`` turn by turn; the outcome and the final view."""
    from ..compactor import Compactor

    script = turns(session.messages)
    compactor = Compactor(policy, store, session=new_session)
    compactor.set_request(system=session.system or "")
    counter = TokenCounter()
    overhead = counter.text(session.system or "")
    out = Outcome(
        source=f"{session.format}:{session.name}",
        policy=compactor.name,
        context_limit=policy.context_limit,
        dry_run=new_session is None,
    )
    root = Path(store.root)
    turn = 0

    def seen(event: CompactionEvent) -> None:
        out.passes.append(
            Event(
                turn,
                event.stage,
                event.before,
                event.after,
                event.before - event.after,
                event.note,
                [shown_path(p, root) for p in event.paths],
            )
        )

    compactor.subscribe(seen)
    messages: list[Any] = list(script.head)
    view: list[Any] = []
    for index in range(script.turns + 1):
        turn = index + 1
        fired = len(out.passes)
        view = compactor.prepare(messages, script.requests[index])
        size = overhead + sum(counter.message(m) for m in view)
        given = overhead + sum(counter.message(m) for m in messages)
        if len(out.passes) == fired and size < given:
            # Peers report no events: the pass is read off what went in and what came out.
            note = "measured from the view (this engine reports no events)"
            out.passes.append(Event(turn, compactor.name, given, size, given - size, note, []))
        out.view_tokens.append(size)
        if index < script.turns:
            messages = [*view, *script.steps[index]]
    out.uncompacted_tokens = overhead + sum(counter.message(m) for m in script.messages)
    out.final_view_tokens = out.view_tokens[-1] if out.view_tokens else overhead
    out.final_view_messages = len(view)
    return out, view


def run_compact(
    session: Session,
    policy: Any,
    store: Store | None,
    meta: dict[str, Any],
) -> Outcome:
    """Replay; with a ``store``, keep the result as a new session there (see the docstring)."""
    from ..store.memory import MemoryStore

    if store is None:
        outcome, _ = replay_policy(session, policy, MemoryStore())
        return outcome
    if policy.engine == "default":
        # The system prompt goes with the session, as an import keeps it: export shows it.
        sid = store.create_session(
            {"engine": "default", "policy": asdict(policy), "system": session.system, **meta}
        )
        outcome, _ = replay_policy(session, policy, store, new_session=sid)
        outcome.dry_run = False
    else:
        outcome, view = replay_policy(session, policy, store)
        from ..history.transfer import import_session

        kept = replace(session, messages=view, skipped=0, notes={})
        sid = import_session(store, kept, meta).id
        outcome.dry_run = False
    outcome.session = sid
    return outcome


def load_target(target: str, workdir: Path, index: int) -> tuple[Session, str | None]:
    """The session to replay: a stored session's latest conversation, or a log file's
    trajectory number ``index``; and the stored id, if it was one."""
    from ..loaders import describe, load_file
    from ..store import WORKDIR_DB
    from .store_choice import cli_store, selected

    db = workdir / WORKDIR_DB
    if (selected() or db.is_file()) and not Path(target).exists():
        store = cli_store(workdir)
        try:
            meta = need_session(store, target)
            target = meta.id
            messages = history(store, target)
        finally:
            store.close()
        name = meta.name or target
        fmt = meta.format or "session"
        return Session(name, fmt, meta.system, messages, 0, str(db)), target
    path = Path(target)
    if not path.exists():
        raise click.ClickException(f"{target!r} is neither a session in {db} nor a file")
    try:
        sessions = load_file(path)
    except LOAD_ERRORS as error:
        raise click.ClickException(f"cannot read {path}: {describe(error, path)}") from None
    if not 0 <= index < len(sessions):
        raise click.UsageError(f"{path} holds {len(sessions)} trajectories; --index {index}")
    return sessions[index], None


@click.command("compact")
@click.argument("target", metavar="ID|FILE")
@click.option(
    "--policy",
    cls=PolicyOption,
    type=PolicyName(),
    default="default",
    show_default=True,
    help="The engine to replay the session through: ours or one of the bench's peers.",
)
@click.option(
    "--context-limit",
    type=click.IntRange(min=1),
    default=None,
    help="The policy's limit (tokens; characters for seed). Default: the policy's own.",
)
@click.option("--dry-run", is_flag=True, help="Show what would happen; write nothing.")
@click.option("--index", type=click.IntRange(min=0), default=0, help="Trajectory in FILE.")
@workdir_option
@json_option
@guards_store
def compact_command(
    target: str,
    policy: str,
    context_limit: int | None,
    dry_run: bool,
    index: int,
    workdir: Path | None,
    as_json: bool,
) -> None:
    """Replay session ID (or a log FILE) through --policy, offline: what each compaction pass
    does, and the final view. Without --dry-run the result is kept as a NEW session."""
    from .agent import make_policy
    from .store_choice import cli_store

    root = Path(workdir or Path.cwd()).resolve()
    with quiet_loaders():
        session, sid = load_target(target, root, index)
    chosen = make_policy(policy, None, context_limit)
    meta = {"source": "compact", "policy_name": policy, "of": sid or str(Path(target).resolve())}
    store = None if dry_run else cli_store(root)
    try:
        outcome = run_compact(session, chosen, store, meta)
    except Exception as error:  # a policy that gives up is reported, not a traceback
        raise click.ClickException(f"{policy} failed on {target}: {error}") from None
    finally:
        if store is not None:
            store.close()
    if as_json:
        click.echo(dumps(outcome.as_dict(), indent=1))
        return
    _report(outcome, target)


def _report(o: Outcome, target: str) -> None:
    unit = "characters" if o.policy == "seed" else "tokens"
    click.echo(
        fill(
            f"{target} under {o.policy} (limit {o.context_limit:,} {unit}), replayed turn by "
            f"turn offline with extractive summaries: {len(o.view_tokens) - 1} turns",
            80,
        )
    )
    legend = after_last(len(o.view_tokens) - 1, [p.turn for p in o.passes])
    if legend:
        click.echo(fill(legend, 80))
    for p in o.passes:
        for line in pass_lines(p.turn, p.stage, p.before, p.after, p.note, p.paths):
            click.echo(line)
    if not o.passes:
        click.echo("  no compaction pass fired")
    peak = max(o.view_tokens, default=0)
    click.echo(
        f"final view: {o.final_view_tokens:,} tokens in {o.final_view_messages} messages "
        f"(uncompacted: {o.uncompacted_tokens:,}; peak {peak:,})"
    )
    if o.session is None:
        click.echo("dry run: nothing written (paths above are where copies would go)")
    else:
        click.echo(
            f"wrote new session {o.session} (source unchanged); "
            f"inspect it: context-compact inspect {o.session}"
        )


__all__ = ["Outcome", "compact_command", "load_target", "replay_policy", "run_compact"]
