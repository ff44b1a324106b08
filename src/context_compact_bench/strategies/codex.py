"""``codex``: Codex CLI's auto-compaction.

Source: openai/codex, ``codex-rs/core/src/compact.rs`` (``run_compact_task_inner``,
``build_compacted_history``, ``COMPACT_USER_MESSAGE_MAX_TOKENS`` = 20,000), read 2025-11.
As published:

* When the conversation reaches the auto-compact token limit, the whole history is sent
  to the model with a summarization prompt (oldest items dropped if even that overflows).
* The history is then *replaced* by: the initial context (system prompt, kept here as
  overhead), the most recent real user messages up to 20,000 tokens in total (the oldest
  one that does not fit is truncated; earlier summaries are not user messages), and the
  summary as one user message behind a fixed hand-off prefix.
* Tool outputs are truncated when they are recorded into history (model truncation policy
  ``bytes``, 10,000; head and tail around a marker).

The limit here is the bench budget, checked before each request (Codex checks the usage of
the previous response; with a limit below the window, that is the same decision a turn
earlier). The rollout file on disk keeps everything, but the model has no reference to
it: results that only live there count as lost.
"""

from __future__ import annotations

from typing import Any

from context_compact.engine import Env
from context_compact.loaders.turns import request_text
from context_compact.messages import Message, blocks, is_request, result_text
from context_compact.sizing import TokenCounter, text_tokens
from context_compact.summary.contract import Summarizes

from .base import LoggedStrategy, result_positions, summary_text, truncate_middle, with_result

USER_MESSAGE_MAX_TOKENS = 20_000
MAX_OUTPUT_BYTES = 10_000
SUMMARY_PREFIX = (
    "Another language model worked on this task before you and left the summary below. "
    "Build on its work and do not repeat what it already did."
)


class AutoCompact(LoggedStrategy):
    name = "codex"

    def __init__(
        self,
        summarizer: Summarizes,
        limit: int,
        overhead: int = 0,
        user_message_max_tokens: int = USER_MESSAGE_MAX_TOKENS,
        max_output: int = MAX_OUTPUT_BYTES,
    ) -> None:
        self.summarizer = summarizer
        self.limit = limit
        self.fixed_tokens = overhead
        self.user_message_max_tokens = user_message_max_tokens
        self.max_output = max_output
        self.counter = TokenCounter()
        super().__init__()

    def admit(self, message: Message) -> Message:
        long = {
            bi: truncate_middle(result_text(blocks(message)[bi]), self.max_output, "bytes")
            for bi in result_positions(message)
            if len(result_text(blocks(message)[bi]).encode("utf-8")) > self.max_output
        }
        return with_result(message, long) if long else message

    def _is_summary(self, message: Message) -> bool:
        content = message.get("content")
        return isinstance(content, str) and content.startswith(SUMMARY_PREFIX)

    def _summarize_now(self) -> None:
        summary = summary_text(self.summarizer, list(self.log))
        users = [m for m in self.log if is_request(m) and not self._is_summary(m)]
        selected: list[Message] = []
        remaining = self.user_message_max_tokens
        for message in reversed(users):
            if remaining <= 0:
                break
            text = request_text(message)
            tokens = text_tokens(text)
            if tokens <= remaining:
                selected.append(message)
                remaining -= tokens
            else:
                selected.append({"role": "user", "content": truncate_middle(text, 4 * remaining)})
                break
        selected.reverse()
        self.log = [*selected, {"role": "user", "content": f"{SUMMARY_PREFIX}\n{summary}"}]
        self._cache = {}

    def prepare(self, messages: list[Message], active_request: str) -> list[Message]:
        self.sync(messages)
        if self.counter.messages(self.log) + self.fixed_tokens > self.limit:
            self._summarize_now()
        return self.returned(list(self.log))


def engine(policy: Any, env: Env) -> AutoCompact:
    return AutoCompact(env.summarizer, limit=policy.context_limit)
