"""Compactor: the one object an agent loop calls before every model request.

    messages = compactor.prepare(messages, active_request)

``prepare`` runs the stages in one fixed order (S-6.1): tool_result_budget, snip_compact,
micro_compact, then compact_history only if the view is still over ``context_limit``.
``reactive_compact`` is for after the API refused the prompt (S-5). Each stage is also
callable on its own.

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
from .sizing import TokenCounter, estimate_chars
from .stages import budget, micro, snip, summary
from .stages.base import StageContext, Summarizer
from .store.base import Store
from .store.files import FileStore
from .summarize import extractive_summary

Message = dict[str, Any]


class Compactor:
    def __init__(
        self,
        policy: Policy | None = None,
        store: Store | None = None,
        summarizer: Summarizer | None = None,
    ) -> None:
        self.policy = policy if policy is not None else Policy.seed()
        self.store: Store = store if store is not None else FileStore(Path.cwd())
        self.summarizer: Summarizer = summarizer or (lambda msgs: extractive_summary(msgs))
        self.events: list[CompactionEvent] = []
        self._subscribers: list[Callable[[CompactionEvent], None]] = []
        self.tokens = TokenCounter()
        self.ctx = StageContext(self.policy, self.store, self.size, self._emit)

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

    def compact_history(self, messages: list[Message], active_request: str) -> list[Message]:
        ensure_valid(messages)
        return summary.compact_history(messages, active_request, self.ctx, self.summarizer)

    def reactive_compact(self, messages: list[Message], active_request: str) -> list[Message]:
        ensure_valid(messages)
        return summary.reactive_compact(messages, active_request, self.ctx, self.summarizer)

    # -- the pipeline --------------------------------------------------------
    def prepare(self, messages: list[Message], active_request: str) -> list[Message]:
        """S-6.1: budget, snip, micro, then summarize only if still over the limit."""
        ensure_valid(messages)
        view = budget.tool_result_budget(messages, self.ctx)
        view = snip.snip_compact(view, self.ctx)
        view = micro.micro_compact(view, self.ctx)
        if self.size(view) > self.policy.context_limit:
            view = summary.compact_history(view, active_request, self.ctx, self.summarizer)
        return view
