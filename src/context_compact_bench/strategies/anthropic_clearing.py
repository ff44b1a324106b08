"""``anthropic-clearing``: Anthropic's server-side tool-result clearing.

Source: Anthropic, "Context editing" (docs.claude.com/en/docs/build-with-claude/
context-editing, beta header ``context-management-2025-06-27``, read 2025-11), strategy
``clear_tool_uses_20250919``. As documented:

* ``trigger``: once the prompt exceeds this many input tokens (default 100,000) the
  strategy activates. Here ``min(100_000, budget)``, so it can act inside smaller budgets.
* ``keep``: the most recent tool uses whose results stay (default 3 tool uses).
* When it activates, the oldest tool results are cleared in chronological order and
  replaced by placeholder text; tool inputs stay (``clear_tool_inputs`` false).
* ``clear_at_least``: if fewer tokens than this would be cleared, the strategy is not
  applied (default: unset).
* Editing is applied server-side to each request; the client keeps and resends its full,
  unmodified history. The prompt cache holds the edited prompt, so a prefix is broken
  where content is newly cleared.

Nothing here keeps a copy the model can reach (the client's own log is not addressable by
the model), so a cleared result counts as lost.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from context_compact.engine import Env
from context_compact.messages import Message, blocks, is_tool_use, result_at, result_text
from context_compact.sizing import TokenCounter

from .base import LoggedStrategy, result_positions, with_result

TRIGGER = 100_000
KEEP = 3
PLACEHOLDER = "[tool result cleared by context management]"


class ToolResultClearing(LoggedStrategy):
    name = "anthropic-clearing"

    def __init__(
        self,
        trigger: int = TRIGGER,
        keep: int = KEEP,
        clear_at_least: int | None = None,
        overhead: int = 0,
    ) -> None:
        self.trigger = trigger
        self.keep = keep
        self.clear_at_least = clear_at_least
        self.fixed_tokens = overhead
        self.counter = TokenCounter()
        super().__init__()

    def reset(self) -> None:
        super().reset()
        self._uses: list[str] = []
        self._results: list[tuple[int, int, str]] = []
        self._indexed = 0
        self._saving: dict[tuple[int, int], int] = {}

    def _index(self) -> None:
        for li in range(self._indexed, len(self.log)):
            message = self.log[li]
            if message.get("role") == "assistant":
                self._uses.extend(b["id"] for b in blocks(message) if is_tool_use(b))
            for bi in result_positions(message):
                block = result_at(message, bi)
                self._results.append((li, bi, block["tool_use_id"]))
                self._saving[(li, bi)] = self.counter.text(result_text(block)) - self.counter.text(
                    PLACEHOLDER
                )
        self._indexed = len(self.log)

    def prepare(self, messages: list[Message], active_request: str) -> list[Message]:
        self.sync(messages)
        self._index()
        full = self.counter.messages(self.log) + self.fixed_tokens
        if full <= self.trigger:
            return self.returned(list(self.log))
        kept = set(self._uses[-self.keep :]) if self.keep else set()
        cleared: dict[int, tuple[int, ...]] = {}
        freed = 0
        for li, bi, use_id in self._results:
            if use_id in kept:
                continue
            cleared[li] = (*cleared.get(li, ()), bi)
            freed += self._saving[(li, bi)]
        if not cleared or (self.clear_at_least and freed < self.clear_at_least):
            return self.returned(list(self.log))
        view = [
            self.rendered(li, cleared[li], partial(_clear, m, cleared[li])) if li in cleared else m
            for li, m in enumerate(self.log)
        ]
        return self.returned(view)


def _clear(message: Message, which: tuple[int, ...]) -> Message:
    return with_result(message, dict.fromkeys(which, PLACEHOLDER))


def engine(policy: Any, env: Env) -> ToolResultClearing:
    return ToolResultClearing(trigger=min(TRIGGER, policy.context_limit))
