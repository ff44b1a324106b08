"""A recorded session as an agent loop would have sent it: what went first, then each turn.

    Turns(head, steps, requests)

``head`` is the history before the model's first call (up to the first assistant message,
at least one message); ``steps[i]`` is what the loop appended after call ``i``: an
assistant message and the messages that follow it up to the next one (tool results, or a
new request). ``requests[i]`` is the latest user request at call ``i`` (what ``prepare`` is
told is active), ``""`` before any: there is one per call, ``len(steps) + 1``.

Invariant: ``head`` and the steps, joined in order, are the session's messages, each once
(``messages``); nothing is copied or changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..messages import Message, blocks, is_request


@dataclass(frozen=True)
class Turns:
    head: tuple[Message, ...]
    steps: tuple[tuple[Message, ...], ...]
    requests: tuple[str, ...]

    @property
    def turns(self) -> int:
        return len(self.steps)

    @property
    def messages(self) -> list[Message]:
        """The whole session, as a caller that never compacts would hold it."""
        return [*self.head, *(m for step in self.steps for m in step)]


def request_text(message: Message) -> str:
    """The text of a user request: its string, or its blocks' texts a line each."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in blocks(message))


def turns(messages: Sequence[Message]) -> Turns:
    """``messages`` cut into what was sent first and one step per assistant message."""
    first = next((i for i, m in enumerate(messages) if m.get("role") == "assistant"), None)
    if first is None or first == 0:
        first = min(1, len(messages))
    head = tuple(messages[:first])
    steps: list[tuple[Message, ...]] = []
    current: list[Message] = []
    for message in messages[first:]:
        if message.get("role") == "assistant" and current:
            steps.append(tuple(current))
            current = []
        current.append(message)
    if current:
        steps.append(tuple(current))
    requests: list[str] = []
    latest = ""
    for message in head:
        if is_request(message):
            latest = request_text(message)
    requests.append(latest)
    for step in steps:
        for message in step:
            if is_request(message):
                latest = request_text(message)
        requests.append(latest)
    return Turns(head, tuple(steps), tuple(requests))


__all__ = ["Turns", "request_text", "turns"]
