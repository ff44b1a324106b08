"""``langchain-summarizer``: LangChain's ``SummarizationMiddleware``, modelled.

Follows ``langchain`` 1.5.2 (``langchain/agents/middleware/summarization.py``), checked against
the real one by ``bench --real-peers``, at the defaults that bench uses: ``keep=("messages",
20)`` (the library default) and ``trigger=("fraction", 0.8)`` of a window equal to the budget
(``trigger`` has no default; this is its docstring's example). As that version does it:

* The state is LangChain messages (``parts.py``: an assistant message, each tool result, a
  user text), without the system prompt; they are counted before every model call.
* At 80% of the window, everything but the last 20 messages is summarized; when the cut falls
  on a tool message, it moves back to the AI message that made the call, so the pair stays
  together. The last 20 are kept whatever their size, so the request can stay over budget.
* The summary replaces them for good, as a user message ``Here is a summary of the
  conversation to date:``; it is itself summarized with the rest next time. The summarizer is
  shown the newest of the summarized messages that fit ``trim_tokens_to_summarize`` = 4,000,
  starting at a human message; when none is left, the summary is the fixed text "Previous
  conversation was too long to summarize." and no model is called.
"""

from __future__ import annotations

from typing import Any

from context_compact.engine import Env
from context_compact.messages import Message, blocks, is_result, is_tool_use
from context_compact.sizing import TokenCounter
from context_compact.summary.contract import Summarizes

from .base import LoggedStrategy, summary_text
from .parts import Renderer, split

KEEP = 20
FRACTION = 0.8
TRIM_TOKENS = 4_000
TOO_LONG = "Previous conversation was too long to summarize."
PREFIX = "Here is a summary of the conversation to date:\n\n"


def _is_tool(part: Message) -> bool:
    return any(is_result(b) for b in blocks(part))


def _call_ids(part: Message) -> set[str]:
    return {b["id"] for b in blocks(part) if is_tool_use(b)}


class SummarizationMiddlewareModel(LoggedStrategy):
    name = "langchain-summarizer"

    def __init__(self, summarizer: Summarizes, budget: int, keep: int = KEEP) -> None:
        self.summarizer = summarizer
        self.trigger = int(budget * FRACTION)
        self.keep = keep
        self.counter = TokenCounter()
        self.renderer = Renderer()
        super().__init__()

    def reset(self) -> None:
        super().reset()
        self.state: list[Message] = []
        self._indexed = 0

    def cutoff(self) -> int:
        parts = self.state
        if len(parts) <= self.keep:
            return 0
        cut = len(parts) - self.keep
        if not _is_tool(parts[cut]):
            return cut
        ids = {b["tool_use_id"] for b in blocks(parts[cut]) if is_result(b)}
        for i in range(cut - 1, -1, -1):
            if parts[i].get("role") == "assistant" and _call_ids(parts[i]) & ids:
                return i
        while cut < len(parts) and _is_tool(parts[cut]):
            cut += 1
        return cut

    def prepare(self, messages: list[Message], active_request: str) -> list[Message]:
        self.sync(messages)
        for message in self.log[self._indexed :]:
            self.state.extend(split(message))
        self._indexed = len(self.log)
        if sum(self.counter.message(p) for p in self.state) >= self.trigger:
            cut = self.cutoff()
            if cut > 0:
                old, kept = self.state[:cut], self.state[cut:]
                text = self.summarize(old)
                self.state = [{"role": "user", "content": PREFIX + text}, *kept]
        return self.returned(self.renderer.render(self.state))

    def summarize(self, old: list[Message]) -> str:
        """``trim_messages(old, max_tokens=4000, strategy="last", start_on="human")``, then
        the summarizer; when nothing is left, the middleware's fixed text and no call."""
        shown: list[Message] = []
        room = TRIM_TOKENS
        for part in reversed(old):
            room -= self.counter.message(part)
            if room < 0:
                break
            shown.insert(0, part)
        while shown and (shown[0].get("role") != "user" or _is_tool(shown[0])):
            shown.pop(0)
        if not shown:
            return TOO_LONG
        return summary_text(self.summarizer, self.renderer.render(shown))


def engine(policy: Any, env: Env) -> SummarizationMiddlewareModel:
    return SummarizationMiddlewareModel(env.summarizer, policy.context_limit)
