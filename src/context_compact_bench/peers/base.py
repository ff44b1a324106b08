"""What every real-peer adapter shares: the summary text, the token count, the peer's own time.

A real peer is the peer's installed code, driven through its own public hook, behind the
bench's ``Strategy`` protocol (``name``, ``prepare(messages, request) -> view``). The adapter
converts the messages the loop appended since the last call into the peer's native types
(once per message), hands them to the peer, and converts what the peer would send back into
Anthropic-style dicts, so the replay measures every strategy with one token counter.

* **The same summary text.** Each peer's fake model is of the peer's own kind (a LangChain
  chat model, a LlamaIndex ``CustomLLM``, an OpenHands ``LLM``); all of them answer with the
  bench's ``BenchSummarizer`` over the prompt the peer built, so every strategy gets summary
  text of the same size made the same way, and the summarizer's input tokens are what the peer
  really sends.
* **One token counter.** Where a peer counts tokens, it is given ours (``TokenCounter``),
  so the budget means the same thing for every strategy.
* **The peer's own time.** ``peer_ms`` holds, per call, the time spent inside the peer's
  hook alone (conversion excluded): that is what a user of the peer, who already holds native
  messages, pays.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from context_compact.messages import Message
from context_compact.sizing import TokenCounter

T = TypeVar("T")


class Summary:
    """The bench's summarizer behind a prompt-in, text-out call (what a fake model needs)."""

    def __init__(self, summarizer: Any) -> None:
        self.summarizer = summarizer

    def __call__(self, prompt: str) -> str:
        return str(self.summarizer([{"role": "user", "content": prompt}]))


class PeerStrategy:
    """The bench side of a real peer: new messages in, the peer's view out, its time kept."""

    name = "peer"
    version = ""

    def __init__(self) -> None:
        self.peer_ms: list[float] = []
        self.counter = TokenCounter()
        self._returned: list[Message] | None = None

    def new_messages(self, messages: list[Message]) -> list[Message]:
        """What the loop appended to the view this adapter last returned."""
        returned = self._returned
        if returned is None:
            return list(messages)
        n = len(returned)
        if len(messages) < n or any(
            a is not b and a != b for a, b in zip(returned, messages, strict=False)
        ):
            raise ValueError(f"{self.name}: the history does not extend the view returned")
        return list(messages[n:])

    def timed(self, call: Callable[[], T]) -> T:
        started = time.perf_counter()
        try:
            return call()
        finally:
            self.peer_ms.append((time.perf_counter() - started) * 1000)

    def returned(self, view: list[Message]) -> list[Message]:
        self._returned = view
        return view


def merge_runs(parts: Iterable[Message]) -> list[Message]:
    """Anthropic messages from a peer's parts, each run of user-side parts (tool results,
    text) merged into one user message (``merge_user``)."""
    out: list[Message] = []
    pending: list[Message] = []
    for part in parts:
        if part["role"] == "user":
            pending.append(part)
            continue
        if pending:
            out.append(merge_user(pending))
            pending = []
        out.append(part)
    if pending:
        out.append(merge_user(pending))
    return out


def merge_user(parts: list[Message]) -> Message:
    """One Anthropic user message from consecutive user-side parts (tool results, text)."""
    if len(parts) == 1:
        return parts[0]
    content: list[Any] = []
    for part in parts:
        body = part["content"]
        content.extend([{"type": "text", "text": body}] if isinstance(body, str) else body)
    return {"role": "user", "content": content}
