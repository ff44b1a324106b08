"""``llamaindex-summary``: LlamaIndex's ``ChatSummaryMemoryBuffer``, modelled.

Follows ``llama-index-core`` 0.14.25 (``llama_index/core/memory/chat_summary_memory_buffer.py``),
checked against the real one by ``bench --real-peers``, at ``from_defaults(llm=...)`` with a
window equal to the budget. As that version does it:

* ``token_limit = 0.75 x`` the window; the system prompt is not counted
  (``count_initial_tokens=False``).
* The history is LlamaIndex messages (``parts.py``: an assistant message, each tool result, a
  user text). Each ``get()`` keeps the newest messages whose *text* fits the limit; a message is
  counted by ``str(message.content)`` alone, so tool-call arguments and thinking count nothing
  (an assistant message of tool calls only counts as ``"None"``).
* The kept history never opens with an assistant or tool message: those are moved to the part
  summarized. In a tool loop the newest user text is far back, so a summary leaves only itself.
* The rest, with the previous summary, becomes one summary (a system message; the bench sends
  it as a user message). The summarizer is shown only messages with text content.
"""

from __future__ import annotations

from typing import Any

from context_compact.engine import Env
from context_compact.messages import Message, block_type, blocks, is_result, result_text
from context_compact.sizing import text_tokens
from context_compact.summary.contract import Summarizes

from .base import LoggedStrategy, summary_text
from .parts import Renderer, split

RATIO = 0.75


def text_of(part: Message) -> str:
    """``str(ChatMessage.content)``: the text blocks joined, ``"None"`` when there are none."""
    content = part.get("content")
    if isinstance(content, str):
        return content
    texts = [
        result_text(b) if is_result(b) else str(b.get("text", ""))
        for b in blocks(part)
        if block_type(b) in ("text", "tool_result")
    ]
    return "\n".join(texts) or "None"


def opens_badly(part: Message) -> bool:
    return part.get("role") == "assistant" or any(is_result(b) for b in blocks(part))


class SummaryBufferModel(LoggedStrategy):
    name = "llamaindex-summary"

    def __init__(self, summarizer: Summarizes, budget: int) -> None:
        self.summarizer = summarizer
        self.limit = int(budget * RATIO)
        self.renderer = Renderer()
        self._tokens: dict[int, tuple[Message, int]] = {}
        super().__init__()

    def reset(self) -> None:
        super().reset()
        self.state: list[Message] = []
        self.summary: Message | None = None
        self._indexed = 0

    def tokens(self, part: Message) -> int:
        hit = self._tokens.get(id(part))
        if hit is not None and hit[0] is part:
            return hit[1]
        n = text_tokens(text_of(part))
        self._tokens[id(part)] = (part, n)
        return n

    def prepare(self, messages: list[Message], active_request: str) -> list[Message]:
        self.sync(messages)
        for message in self.log[self._indexed :]:
            self.state.extend(split(message))
        self._indexed = len(self.log)
        history = ([self.summary] if self.summary is not None else []) + self.state
        used, start = 0, len(history)
        while start > 0 and used + self.tokens(history[start - 1]) <= self.limit:
            used += self.tokens(history[start - 1])
            start -= 1
        while start < len(history) and opens_badly(history[start]):
            start += 1
        old = history[:start]
        if old and not (len(old) == 1 and old[0] is self.summary):
            shown = [p for p in old if isinstance(p.get("content"), str) or text_of(p) != "None"]
            text = summary_text(self.summarizer, self.renderer.render(shown or old))
            self.summary = {"role": "user", "content": text}
        self.state = [p for p in history[start:] if p is not self.summary]
        view = ([self.summary] if self.summary is not None else []) + self.state
        return self.returned(self.renderer.render(view))


def engine(policy: Any, env: Env) -> SummaryBufferModel:
    return SummaryBufferModel(env.summarizer, policy.context_limit)
