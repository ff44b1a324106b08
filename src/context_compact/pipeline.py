"""Compactor: the one object an agent loop calls before every model request.

    messages = compactor.prepare(messages, active_request)

``prepare`` runs the stages in one fixed order (S-6.1): tool_result_budget, snip_compact,
micro_compact, then compact_history only if the view is still over ``context_limit``.
``reactive_compact`` is for after the API refused the prompt (S-5). Each stage is also
callable on its own.

Under ``Policy.default()`` the Compactor is stateful: it keeps an append-only log of every
message it was given and returns a view derived from it (see ``view.py``). Callers may pass
back the view they got plus what they appended (the seed's loop), or their own full
history; both are recognized.

Invariants, for every method: the input must pass ``check()`` (else ``InvalidHistory``
naming the message and the rule); the output passes ``check()``; the input list, its
messages and its blocks are never modified; every change is reported as a
``CompactionEvent`` to ``events`` and to subscribers.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .events import CompactionEvent
from .invariants import ensure_valid
from .policy import Policy
from .sizing import TokenCounter, estimate_chars, to_json
from .stages import budget, micro, snip, summary
from .stages.base import StageContext, Summarizer
from .store.base import Store
from .store.files import FileStore
from .summarize import extractive_summary, focused
from .view import SessionView

Message = dict[str, Any]


class Compactor:
    def __init__(
        self,
        policy: Policy | None = None,
        store: Store | None = None,
        summarizer: Summarizer | None = None,
    ) -> None:
        self.policy = policy if policy is not None else Policy.default()
        self.store: Store = store if store is not None else FileStore(Path.cwd())
        self.summarizer: Summarizer = summarizer or (lambda msgs: extractive_summary(msgs))
        self.events: list[CompactionEvent] = []
        self._subscribers: list[Callable[[CompactionEvent], None]] = []
        # Real token counts where tiktoken and its encoding files are present; the estimate
        # otherwise (and always for the seed preset, which counts characters).
        self.tokens = TokenCounter(use_tiktoken=self.policy.unit == "tokens")
        self.ctx = StageContext(self.policy, self.store, self.size, self._emit)
        self.session: SessionView | None = None
        if self.policy.preset == "default":
            self.session = SessionView(
                self.policy, self.store, self.summarizer, self.tokens, self._emit
            )

    def set_request(self, system: str | None = None, tools: list[Any] | None = None) -> None:
        """Count the system prompt and tool schemas into the budget (default preset)."""
        if self.session is not None:
            self.session.overhead = self.tokens.text(system or "") + self.tokens.text(
                to_json(tools or [])
            )

    def observe(self, usage: Any) -> None:
        """Calibrate with the API's usage for the view returned last (default preset).

        ``usage`` is a ``providers.Usage``, an Anthropic SDK usage (``input_tokens`` plus the
        cache read/creation counts), an OpenAI SDK usage (``prompt_tokens``), the same as a
        dict, or an int. Anything else is ignored rather than guessed at.
        """
        if self.session is None:
            return
        self.session.observe(prompt_tokens_of(usage))

    # -- sizing and events -------------------------------------------------
    def size(self, messages: list[Any]) -> int:
        """The size of a history in the policy's unit (chars for the seed preset)."""
        if self.policy.unit == "chars":
            return estimate_chars(messages)
        return self.tokens.messages(messages)

    def subscribe(self, callback: Callable[[CompactionEvent], None]) -> None:
        self._subscribers.append(callback)

    def _emit(self, event: CompactionEvent) -> None:
        self.events.append(event)
        for callback in self._subscribers:
            callback(event)

    # -- the stages, one by one --------------------------------------------
    def tool_result_budget(self, messages: list[Message]) -> list[Message]:
        ensure_valid(messages)
        return budget.tool_result_budget(messages, self.ctx)

    def snip_compact(self, messages: list[Message]) -> list[Message]:
        ensure_valid(messages)
        return snip.snip_compact(messages, self.ctx)

    def micro_compact(self, messages: list[Message]) -> list[Message]:
        ensure_valid(messages)
        return micro.micro_compact(messages, self.ctx)

    def compact_history(
        self, messages: list[Message], active_request: str, instructions: str | None = None
    ) -> list[Message]:
        if self.session is not None:
            return self.session.compact(messages, active_request, instructions)
        ensure_valid(messages)
        summarizer = focused(self.summarizer, instructions)
        return summary.compact_history(messages, active_request, self.ctx, summarizer)

    def reactive_compact(self, messages: list[Message], active_request: str) -> list[Message]:
        if self.session is not None:
            return self.session.reactive(messages, active_request)
        ensure_valid(messages)
        return summary.reactive_compact(messages, active_request, self.ctx, self.summarizer)

    # -- the pipeline --------------------------------------------------------
    def prepare(self, messages: list[Message], active_request: str) -> list[Message]:
        """S-6.1: budget, snip, micro, then summarize only if still over the limit."""
        if self.session is not None:
            return self.session.prepare(messages, active_request)
        ensure_valid(messages)
        view = budget.tool_result_budget(messages, self.ctx)
        view = snip.snip_compact(view, self.ctx)
        view = micro.micro_compact(view, self.ctx)
        if self.size(view) > self.policy.context_limit:
            if self.policy.echo:
                print("[auto compact]")
            view = summary.compact_history(view, active_request, self.ctx, self.summarizer)
        return view


def prompt_tokens_of(usage: Any) -> int:
    """Every input token a usage report counts, cached or not; 0 when it says nothing."""
    if isinstance(usage, bool):
        return 0
    if isinstance(usage, int):
        return usage
    get = usage.get if isinstance(usage, dict) else lambda name: getattr(usage, name, None)
    prompt = get("prompt_tokens")
    if isinstance(prompt, int) and not isinstance(prompt, bool):
        return prompt
    names = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    return sum(v for v in map(get, names) if isinstance(v, int) and not isinstance(v, bool))
