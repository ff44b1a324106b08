"""The providers' own compaction as tiers, priced beside the default.

Sources: Anthropic, "Compaction" (context-management edit ``compact_20260112``, beta
``compact-2026-01-12``; the on-demand ``compaction`` request, beta ``compact-2026-09-04``;
``anthropic`` 2.15's ``BetaCompactionBlock``), and OpenAI, "Compaction" (Responses API
``context_management=[{"type": "compaction", "compact_threshold": N}]`` and
``POST /responses/compact``), read 2026-11. As documented:

* ``anthropic-compaction``: once the input, counted from the newest compaction block on,
  passes the edit's ``trigger`` (default 150,000 input tokens, at least 50,000), the model
  first writes a ``compaction`` block summarizing the conversation, then answers after it;
  the API drops everything before a block on every later request. Here the trigger is
  ``min(150,000, 0.75 x budget)`` (the default is 75% of a 200k window; the minimum does not
  scale to small budgets). The block is what the model reads from then on: its summary.
* ``openai-compaction``: past ``compact_threshold`` the output opens with an encrypted
  ``compaction`` item; the compacted window is every user message so far, verbatim, then the
  item, which stands for everything else. Same threshold rule. The item is opaque: only
  OpenAI can read it, so what it holds is counted here as its summary's tokens.
* ``default-native``: our default under ``native=True``: the engine decides when and what to
  summarize; the summary is the provider's block from an on-demand compaction request of the
  messages it replaces, as sent (``session/native_tier.py``).

Pricing: a compaction is one model pass over what it replaces, as sent, plus the summary as
output. The request starts with what the previous request sent (system prompt, tools, the
messages up to the cut), so that part is priced as a cache read
(``context_compact.testing.summary_cost``).
The peers keep no copy the model can reach (the client's history is not addressable by the
model): what a block or item replaced counts as lost. Ours archives it first.
"""

from __future__ import annotations

from typing import Any

from context_compact.engine import Env
from context_compact.messages import Block, Message, is_request
from context_compact.session.engine import SessionEngine
from context_compact.session.policy import session_policy
from context_compact.sizing import TokenCounter, text_tokens
from context_compact.summary.contract import SummaryRequest, adapt, text_of
from context_compact.summary.llm import summary_input

from .base import LoggedStrategy

DEFAULT_TRIGGER = 150_000
TRIGGER_SHARE = 0.75


def trigger_for(budget: int) -> int:
    return min(DEFAULT_TRIGGER, int(TRIGGER_SHARE * budget))


class ModelledCompaction:
    """A provider's compaction of ``messages``: the bench's summarizer writes the summary;
    its input is priced as the messages were sent, whatever the summarizer was shown (as a
    ``sends`` entry when the summarizer keeps them, so its cached prefix is a cache read)."""

    def __init__(self, summarizer: Any, counter: TokenCounter | None = None) -> None:
        self.summarizer = summarizer
        self.adapted = adapt(summarizer)
        self.counter = counter or TokenCounter()
        self.blocks = 0

    def summary(self, messages: list[Message]) -> str:
        sends = getattr(self.summarizer, "sends", None)
        if sends is not None:  # priced by the replay as sent: its shared prefix is cached
            before = self.summarizer.input_tokens
            text = str(text_of(self.adapted.summarize(SummaryRequest(messages))))
            self.summarizer.input_tokens = before
            sends.append((list(messages), 0))
            return text
        text = str(text_of(self.adapted.summarize(SummaryRequest(messages))))
        shown = getattr(self.summarizer, "input_limit", None)
        if shown is not None and hasattr(self.summarizer, "input_tokens"):
            sent = self.counter.messages(messages)
            self.summarizer.input_tokens += max(
                0, sent - text_tokens(summary_input(messages, shown))
            )
        return text

    def __call__(self, messages: list[Message]) -> dict[str, Any]:
        self.blocks += 1
        return {
            "type": "compaction",
            "content": self.summary(messages),
            "encrypted_content": f"modelled-{self.blocks:04d}",
            "signature": f"modelled-signature-{self.blocks:04d}",
        }


class ThresholdCompaction(LoggedStrategy):
    """The server's compaction past a trigger: the history from then on is the compacted
    window (``keep_users``: the user messages first, as OpenAI's) and what follows it."""

    def __init__(
        self, name: str, summarizer: Any, trigger: int, keep_users: bool, overhead: int = 0
    ) -> None:
        self.name = name
        self.compaction = ModelledCompaction(summarizer)
        self.trigger = trigger
        self.keep_users = keep_users
        self.fixed_tokens = overhead
        self.counter = self.compaction.counter
        super().__init__()

    def _window(self, summary: str) -> list[Message]:
        block: Block = {"type": "compaction", "content": summary}
        if not self.keep_users:
            return [{"role": "assistant", "content": [block]}]
        users = [m for m in self.log if is_request(m)]
        return [*users, {"role": "assistant", "content": [block]}]

    def prepare(self, messages: list[Message], active_request: str) -> list[Message]:
        self.sync(messages)
        if self.counter.messages(self.log) + self.fixed_tokens > self.trigger:
            self.log = self._window(self.compaction.summary(list(self.log)))
            self._cache = {}
        return self.returned(list(self.log))


def anthropic_engine(policy: Any, env: Env) -> ThresholdCompaction:
    trigger = trigger_for(policy.context_limit)
    return ThresholdCompaction("anthropic-compaction", env.summarizer, trigger, keep_users=False)


def openai_engine(policy: Any, env: Env) -> ThresholdCompaction:
    trigger = trigger_for(policy.context_limit)
    return ThresholdCompaction("openai-compaction", env.summarizer, trigger, keep_users=True)


def default_native_engine(policy: Any, env: Env) -> SessionEngine:
    engine = SessionEngine(session_policy(context_limit=policy.context_limit, native=True), env)
    engine.name = "default-native"
    engine.session.native = ModelledCompaction(env.summarizer, env.counter)
    return engine


__all__ = [
    "ModelledCompaction",
    "ThresholdCompaction",
    "anthropic_engine",
    "default_native_engine",
    "openai_engine",
    "trigger_for",
]
