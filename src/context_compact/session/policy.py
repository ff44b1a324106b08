"""``SessionPolicy``: the settings of the session engine (``session/``), our default: limits
in tokens of the request as sent, an append-only durable log with a view derived from it,
high/low-water clearing."""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, ClassVar

from ..errors import UnknownModelWarning
from ..overrides import positive, with_overrides
from ..sizing import DEFAULT_WINDOW, context_window, known_window
from .ledger_rules import LedgerRules, ledger_rules

LEDGER_SHARE = 25
"""The most of the limit, in thousandths, the ledger takes in a summary message: the work's
record stays well under 3% of a small window."""


@dataclass(frozen=True)
class SessionPolicy:
    """Our default: token budgets, a view over a durable append-only log, nothing lost."""

    engine: ClassVar[str] = "default"
    unit: ClassVar[str] = "tokens"

    context_limit: int = 192_000
    """Most tokens a request may take, system prompt and tools included. ``Policy.default``
    sets it to the model's window minus ``reserve_tokens``."""
    model: str | None = None
    """The model whose window sets ``context_limit`` (``sizing.context_window``)."""
    reserve_tokens: int = 8_000
    """Tokens kept free for the reply when the limit comes from the model's window."""
    high_water: float = 0.92
    """Compaction starts when the request passes this share of the limit... It runs before
    the request is sent, so no room is kept for the turn to come (the limit already leaves
    ``reserve_tokens`` for the reply): the margin only covers the estimate's error, a few
    percent once calibrated (``observe``); a refusal still compacts (``reactive``). Until
    the API has counted a request of the session the mark in force is at most 0.85
    (``knobs.UNCALIBRATED_HIGH_WATER``): the estimate alone can be 10-20% off."""
    low_water: float = 0.12
    """...and clears or summarizes down to this share, so history changes in rare batches:
    every compaction rewrites history, and the turns it buys are the room it leaves under
    ``high_water`` over what a turn adds. At 0.40 a coding session adding ~6% of a 12,500-token
    limit a turn compacted every 7 turns (14% of turns); a clearing that goes deeper costs
    nothing more in cache (it rewrites from its oldest result on either way)."""
    clear_at_least: int = 2_000
    """A clearing or summary that would free fewer tokens is skipped: it would only churn the
    prompt cache (unless the request is over the limit)."""
    keep_recent_turns: int = 3
    """The newest assistant turns kept as they are, as far as they fit. Clearing leaves their
    results in view as far as those turns fit under the low-water mark, the newest turn always
    (``session/cadence.py``; still over the limit, as a last resort, only the newest turn's:
    the request must fit). A summary keeps at most this many turns verbatim: the most of
    them whose kept part fits under the low-water mark, else only as many as fit the limit
    (the newest alone, say); when not even the newest fits, the summary closes the turn and
    its newest steps ride along as text (``session/summary.py``). ``compact_history(...,
    keep_recent_turns=N)`` sets it for one call; 0 summarizes all."""
    batch_budget: float = 0.25
    """Share of the limit the newest, unseen results may take before the largest are persisted
    with a preview."""
    large_result_limit: int = 8_000
    """A new result over this many tokens is persisted with a preview whatever the batch."""
    large_result_share: float = 0.10
    """...or over this share of the limit, if that is smaller."""
    preview_chars: int = 1_500
    """Characters of a persisted result kept in view."""
    summary_input_limit: int = 160_000
    """Most characters of history the model summarizer is given."""
    summary_max_tokens: int = 2_000
    """Length budget of a summary, in tokens (at most 15% of ``context_limit`` in a small
    window): the model is asked to stay under it and its call is capped at it; a longer summary
    from any summarizer is cut to it (a ``summary_capped`` event)."""
    summary_timeout: float = 120.0
    """Seconds a summary call may take before the extractive fallback is used."""
    max_summary_failures: int = 3
    """Summarizer failures in a row (an exception, a timeout, an empty or non-text answer)
    before ``CompactionFailed``; each one before that falls back to the extractive summary."""
    user_words_share: float = 0.10
    """Share of the limit the user's own messages may take in view once turns around them are
    summarized. Every user-authored message (not tool results) stays verbatim, in order, with
    the short assistant text it answered; past this share the oldest are folded into the
    summary, which names them (message number and archive). The first request and the newest
    user message stay whatever their size. At the default 192,000-token limit that is 19,200
    tokens, about what Codex CLI keeps of recent user messages when it compacts (20,000:
    ``COMPACT_USER_MESSAGE_MAX_TOKENS`` in openai/codex ``codex-rs/core/src/compact.rs``)."""
    answered_chars: int = 600
    """An assistant text a pinned user message answered stays with it when at most this many
    characters (a question the user replied to); longer ones are left to the summary."""
    max_over_limit: int = 3
    """Calls in a row still over the limit after compaction before ``CompactionFailed``."""
    max_reactive_retries: int = 1
    """Reactive compactions the agent loop tries per refused call."""

    # -- knobs peers have (each checked in ``session/knobs.py``) ------------------------------
    exclude_tools: tuple[str, ...] = ()
    """Tools whose results are never cleared from the view, however old (Anthropic's
    ``clear_tool_uses`` ``exclude_tools``; LangChain ``ClearToolUsesEdit(exclude_tools=...)``).
    A summary may still fold their turn in; its archive keeps them whole."""
    keep_recent_tool_uses: int = 0
    """The N most recent tool results are never cleared, besides those of the
    ``keep_recent_turns`` newest turns (Anthropic's ``keep: {"type": "tool_uses", "value":
    N}``; LangChain ``ClearToolUsesEdit(keep=N)``). Under the limit's pressure (a refusal, a
    last resort) they are cleared too: the request must fit."""
    clear_placeholder: str | None = None
    """The text that replaces a cleared result, a template: ``{path}`` (the file holding the
    full text, required: nothing leaves the view without saying where it is), ``{chars}`` and
    ``{where}`` (the path, with the line range in a pack). Anthropic and LangChain's
    ``placeholder``; default ``[Tool result cleared from context: ...]``."""
    clear_tool_inputs: bool | tuple[str, ...] = False
    """Clearing a result also clears the input of the call that produced it: the call's
    ``input`` becomes ``{"input_cleared": "[Tool input cleared from context: ...]"}`` naming
    the line of the file that holds the original (one JSONL file per clearing); its id and
    name stay, so the call and its result still pair. True: every tool's inputs; a tuple of
    tool names: only theirs (Anthropic's ``clear_tool_uses`` ``clear_tool_inputs``, a bool or
    a list of tools; LangChain ``ClearToolUsesEdit(clear_tool_inputs=True)``, which empties
    the arguments instead). Default False: only results are cleared, as both peers do."""
    trigger_messages: int | None = None
    """Compaction also starts when the view holds more than this many messages, and then
    summarizes all but the ``keep_recent_turns`` newest turns (LangChain
    ``SummarizationMiddleware(trigger=("messages", N))``). ``high_water`` is the trigger as a
    fraction of the limit (``trigger=("fraction", f)``; Anthropic's ``trigger`` in
    ``input_tokens`` is ``high_water * context_limit``) and ``low_water`` the keep target
    (``keep=("fraction", f)``)."""
    summarize_ahead: bool | None = None
    """Whether the summary is made ahead of need, so the agent does not wait for it: None
    (the default) makes it ahead with a model summarizer
    (``summary.contract.is_model_summarizer``: any but the extractive one, which is fast and
    always made at the trigger); False makes every summary at the trigger; True is the
    default said out loud. Past the soft mark (halfway from ``low_water`` to the high-water
    mark in force) each call predicts whether the coming trigger will summarize, by the rule
    the trigger applies after its clearing; if so the range that summary replaces is fixed
    (a journal record) and its summary asked for on the summarizer's worker while the agent
    goes on; at the trigger, after the clearing, it lands at once, what arrived since
    staying verbatim (``session/ahead.py``)."""
    summary_prompt: str | None = None
    """Replaces the structured summary prompt a model summarizer is given (LangChain's
    ``summary_prompt``; ``instructions=`` and ``/compact focus`` only add a focus to ours).
    A summarizer reads it in ``SummaryRequest.prompt`` (``LLMSummarizer`` does, and so the
    framework models' summarizers); a plain callable and the extractive summary have none."""
    native: bool | str = False
    """The provider's own compaction as the summary tier: True, or ``"auto"`` (where the
    client and model offer it, our own summary elsewhere). A summary the policy decides on
    becomes a compaction request through the drop-in client (``compacting``: Anthropic's
    on-demand ``compaction``, the Responses API's ``compact`` endpoint), its block first in
    every later request, unchanged; what it replaced archived and a readable summary of ours
    kept beside it. A failed or refused request falls back to our own summary
    (``native_fallback`` event); under ``"auto"`` the first one turns the tier off for the
    session. Without a client that offers it (an async client, Chat Completions, a plain
    ``prepare`` loop) our own summary is used, silently under ``"auto"``, with a
    ``native_fallback`` event under ``True`` (``session/native_tier.py``)."""
    preserved_thinking: bool | str = "auto"
    """Whether the model binds each thinking block to its prefix (Claude Fable 5.1 and
    later: a block sent back after anything before it changed is refused or dropped). Then
    a compaction takes the thinking blocks after its change out of the view, in the same
    view, and keeps the turn in progress's opening block (``session/thinking.py``).
    ``"auto"`` (the default): the models documented to check, and newer ``claude-*`` names,
    from ``model`` or the drop-in client's request; and learned from the session's first
    refusal in the API's words or response listing dropped blocks (journaled). True or
    False say it outright."""
    ledger: LedgerRules = field(default_factory=LedgerRules)
    """Which tools the ledger follows (``session/ledger_rules.py``): the ledger is what the
    agent did (files read and changed, commands run, the last test run, open errors), kept
    from the tool calls and results logged, with no model call."""
    ledger_tokens: int = 400
    """Most tokens of the ledger each summary message carries (at most 2.5% of the limit in
    a small window); 0 leaves it out of summaries (``inspect`` still shows it)."""
    handoff: bool = False
    """Where a summary would be made, hand off to a fresh context instead, with no summarizer
    call: the same cut, archive and index, the request and the user's words pinned, the
    ledger and the notes, the newest ``keep_recent_turns`` turns kept (or carried) verbatim,
    and in place of the summary's prose one fixed line saying where everything is. Cheaper
    (no summary call) and never a summarizer's error; what the summary would have said in
    prose is only in the archive, ``recall`` and the ledger."""
    notes_tokens: int = 1_000
    """Most tokens of the agent's notes (the ``notes`` tool, ``session/notes.py``) each
    summary message carries, the newest first, at most 2% of the limit; older notes leave the
    message, not the notes file it names. 0 leaves notes out of summaries."""

    # Small windows (a local model at 4,096 tokens): the fixed sizes above are shares of a
    # large window; below it they scale with the limit.
    @property
    def clear_floor(self) -> int:
        """``clear_at_least``, at most a tenth of the limit."""
        return min(self.clear_at_least, self.context_limit // 10)

    @property
    def preview_size(self) -> int:
        """``preview_chars``, at most about 5% of the limit (a fifth of it in characters)."""
        return min(self.preview_chars, max(200, self.context_limit // 5))

    @property
    def notes_size(self) -> int:
        """``notes_tokens``, at most 2% of the limit."""
        return min(self.notes_tokens, self.context_limit // 50)

    @property
    def ledger_size(self) -> int:
        """``ledger_tokens``, at most 2.5% of the limit (``LEDGER_SHARE``)."""
        return min(self.ledger_tokens, self.context_limit * LEDGER_SHARE // 1000)

    def __post_init__(self) -> None:
        positive(self, "context_limit", "preview_chars", "summary_input_limit")
        object.__setattr__(self, "ledger", ledger_rules(self.ledger))
        if self.ledger_tokens < 0:
            raise ValueError(f"ledger_tokens must be >= 0, got {self.ledger_tokens}")
        if self.notes_tokens < 0:
            raise ValueError(f"notes_tokens must be >= 0, got {self.notes_tokens}")
        _check_knobs(self)
        if not 0 < self.low_water < self.high_water <= 1:
            raise ValueError(
                f"need 0 < low_water < high_water <= 1, got {self.low_water}, {self.high_water}"
            )
        if self.keep_recent_turns < 0:
            raise ValueError("keep_recent_turns must be >= 0")
        if not 0 <= self.user_words_share < self.low_water:
            raise ValueError(f"need 0 <= user_words_share < low_water, got {self.user_words_share}")
        if self.answered_chars < 0 or self.summary_max_tokens <= 0:
            raise ValueError("answered_chars must be >= 0 and summary_max_tokens positive")


def _check_knobs(policy: SessionPolicy) -> None:
    tools = policy.exclude_tools
    if isinstance(tools, str) or not all(isinstance(t, str) for t in tools):
        raise ValueError(f"exclude_tools must be tool names (a tuple of str), got {tools!r}")
    object.__setattr__(policy, "exclude_tools", tuple(tools))
    if policy.keep_recent_tool_uses < 0:
        raise ValueError(f"keep_recent_tool_uses must be >= 0, got {policy.keep_recent_tool_uses}")
    placeholder = policy.clear_placeholder
    if placeholder is not None:
        try:
            filled = placeholder.format(path="\0", chars=0, where="\0")
        except (KeyError, IndexError, ValueError) as error:
            raise ValueError(
                f"clear_placeholder {placeholder!r}: only {{path}}, {{chars}} and {{where}} "
                f"may be filled in ({error})"
            ) from None
        if "\0" not in filled:
            raise ValueError(f"clear_placeholder {placeholder!r} must name the file: {{path}}")
    inputs = policy.clear_tool_inputs
    if not isinstance(inputs, bool):
        if isinstance(inputs, str) or not isinstance(inputs, (tuple, list)):
            raise ValueError(
                f"clear_tool_inputs must be True, False or tool names (a tuple of str), "
                f"got {inputs!r}"
            )
        if not all(isinstance(t, str) for t in inputs):
            raise ValueError(f"clear_tool_inputs: tool names are str, got {inputs!r}")
        object.__setattr__(policy, "clear_tool_inputs", tuple(inputs))
    if policy.trigger_messages is not None and policy.trigger_messages < 2:
        raise ValueError(f"trigger_messages must be >= 2 or None, got {policy.trigger_messages}")
    native = policy.native  # by identity: 1 and 0 are not True and False here
    if native is not True and native is not False and native != "auto":
        raise ValueError(f"native must be False, True or 'auto', got {native!r}")
    kept = policy.preserved_thinking
    if kept is not True and kept is not False and kept != "auto":
        raise ValueError(f"preserved_thinking must be True, False or 'auto', got {kept!r}")
    if policy.summary_prompt is not None and not policy.summary_prompt.strip():
        raise ValueError("summary_prompt must be None or a non-empty text")


def session_policy(**overrides: Any) -> SessionPolicy:
    """``Policy.default``: ``context_limit`` defaults to the window of ``model`` minus
    ``reserve_tokens``; without a model, 200,000 - 8,000 tokens. A model whose window we do
    not know, without ``context_limit``, is said once per process per model: an
    ``UnknownModelWarning``."""
    model = overrides.get("model")
    reserve = overrides.get("reserve_tokens", SessionPolicy.reserve_tokens)
    base = SessionPolicy(context_limit=assumed_limit(model, reserve))
    policy = with_overrides(base, overrides)
    if model and "context_limit" not in overrides and known_window(model) is None:
        _warn_once(str(model))
    return policy


def assumed_limit(model: str | None, reserve: int = SessionPolicy.reserve_tokens) -> int:
    """The ``context_limit`` ``Policy.default`` gives ``model`` when none is given: its window
    (``sizing.context_window``, the default for a name no table knows) less ``reserve``."""
    return max(1, context_window(model) - reserve)


def assumed_window(model: object, context_limit: object, reserve_tokens: object) -> bool:
    """Whether a policy's limit rests on a window assumed for a model we do not know: a model
    no table knows, and the limit ``Policy.default`` derives for it. Given the fields, so a
    stored policy (JSON, as a session's meta keeps it) is read the same way."""
    if not isinstance(model, str) or not model or known_window(model) is not None:
        return False
    if not isinstance(reserve_tokens, int) or not isinstance(context_limit, int):
        return False
    return context_limit == assumed_limit(model, reserve_tokens)


def assumption(policy: SessionPolicy) -> str:
    """What the first event says while ``policy``'s limit rests on an assumed window (one
    clause), "" when it does not."""
    model = policy.model
    if model is None or not assumed_window(model, policy.context_limit, policy.reserve_tokens):
        return ""
    return f"the limit of {policy.context_limit:,} tokens rests on {assumed_note(model)}"


def assumed_note(model: str) -> str:
    """The window assumed for ``model``, and how to set the real one: one clause."""
    return (
        f"a window of {DEFAULT_WINDOW:,} tokens assumed for {model!r}, a model whose window we "
        "do not know (set context_limit to its window)"
    )


def unknown_window_note(model: str, how: str) -> str:
    """What is assumed of a model whose window we do not know, and how to set it: one line."""
    return (
        f"model {model!r} is not one whose context window we know: assuming "
        f"{DEFAULT_WINDOW:,} tokens; if its window is smaller, the first request over it is "
        f"refused (Compactor.recover and the drop-in clients then keep to the window the "
        f"refusal states); to set it, {how}"
    )


# The models said so far in this process: each is said once.
_SAID: set[str] = set()


def _warn_once(model: str) -> None:
    if model in _SAID:
        return
    _SAID.add(model)
    note = unknown_window_note(model, "pass context_limit=N")
    warnings.warn(UnknownModelWarning(note, model), stacklevel=_callers_level())


def _callers_level() -> int:
    """The ``stacklevel`` of the first frame outside this package: the warning names the
    caller's line (``Policy.default`` in a script), not ours."""
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and _ours(frame.f_globals.get("__name__", "")):
        frame, level = frame.f_back, level + 1
    return level


_PACKAGE = __name__.split(".", 1)[0]


def _ours(module: str) -> bool:
    return module == _PACKAGE or module.startswith(_PACKAGE + ".")


__all__ = [
    "SessionPolicy",
    "assumed_limit",
    "assumed_note",
    "assumed_window",
    "assumption",
    "session_policy",
    "unknown_window_note",
]
