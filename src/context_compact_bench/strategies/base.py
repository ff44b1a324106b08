"""What the peer strategies share: the agent's own full log, and cheap re-rendering.

A peer keeps the history its agent would keep (``LoggedStrategy.log``) and derives each
request from it. The bench's loop hands back the view it was given plus what it appended
(as the seed's loop does); ``sync`` recognizes that, and also a caller's own full history,
or a copy of either (``keys.Recognizer``: the same objects or equal content), and appends
only the new messages. Rendered messages are cached by (log index, variant) so an unchanged
message is the same object from call to call: the replay's prefix comparison
and token counting stay cheap, and a cache prefix is never broken by a copy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from context_compact.engine import StatelessEngine
from context_compact.invariants import InvalidHistory, check, check_appended
from context_compact.keys import Known, Recognizer
from context_compact.messages import (
    Block,
    Message,
    as_dicts,
    blocks,
    is_result,
    is_tool_use,
    with_content,
)
from context_compact.summary.contract import Summarizes, SummaryRequest, text_of


def summary_text(summarizer: Summarizes, messages: list[Message]) -> str:
    """The summary of ``messages`` the engine's summarizer (``Env.summarizer``) writes: the
    peers ask for it with the messages alone, as their own summarizers are asked."""
    return str(text_of(summarizer.summarize(SummaryRequest(messages))))


def truncate_middle(text: str, limit: int, unit: str = "chars") -> str:
    """Head and tail of ``text`` around a marker, at most about ``limit`` characters."""
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n…{cut:,} {unit} truncated…\n{text[len(text) - half :]}"


def with_result(message: Message, replaced: dict[int, str]) -> Message:
    """A copy of a user message whose tool_result blocks at ``replaced`` get new content."""
    content: list[Block] = [
        with_content(b, replaced[i]) if i in replaced and is_result(b) else b
        for i, b in enumerate(blocks(message))
    ]
    return {**message, "content": content}


def result_positions(message: Message) -> list[int]:
    if message.get("role") != "user":
        return []
    return [i for i, b in enumerate(blocks(message)) if is_result(b)]


class LoggedStrategy(StatelessEngine):
    name = "logged"

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget everything (a new session, or a caller whose history no longer extends ours)."""
        self.log: list[Message] = []
        self._use_ids: set[str] = set()
        self._returned: list[Message] | None = None
        self._cache: dict[int, tuple[Any, Message]] = {}

    def sync(self, messages: list[Message]) -> list[Message]:
        """Append what the caller added since the last call; return the new messages.

        What is new is validated first (``check_appended``): a bad history raises
        ``InvalidHistory`` naming the caller's index, and the log is left as it was."""
        if not isinstance(messages, list):
            raise InvalidHistory(check(messages))
        try:
            start, restart = self._start(messages)
        except (RecursionError, ValueError):
            # Hashing met a value the JSON encoder cannot write (nested too deep for the
            # caller's stack, an int longer than Python writes as text, a cycle): check()
            # names it, as under the session engine.
            violations = check(as_dicts(messages))
            if not violations:
                raise
            raise InvalidHistory(violations) from None
        new: list[Message] = as_dicts(messages[start:])
        prev = self.log[-1] if self.log and not restart else None
        violations = check_appended(prev, new, set() if restart else self._use_ids)
        if violations:
            raise InvalidHistory([replace(v, index=v.index + start) for v in violations])
        if restart:
            self.reset()
        for message in new:
            self._use_ids.update(b["id"] for b in blocks(message) if is_tool_use(b))
            self.log.append(self.admit(message))
        return new

    def _start(self, messages: list[Message]) -> tuple[int, bool]:
        """Where what is new starts in ``messages``, and whether it is a new conversation."""
        returned = self._returned
        known = Recognizer()
        known.look(messages)
        if returned is not None and known.repeats(Known(returned)):
            return len(returned), False
        if known.repeats(Known(self.log)):
            return len(self.log), False
        return 0, True

    def admit(self, message: Message) -> Message:
        """What the agent records for an incoming message (peers may truncate outputs)."""
        return message

    def rendered(self, index: int, variant: Any, build: Callable[[], Message]) -> Message:
        hit = self._cache.get(index)
        if hit is not None and hit[0] == variant:
            return hit[1]
        message = build()
        self._cache[index] = (variant, message)
        return message

    def returned(self, view: list[Message]) -> list[Message]:
        self._returned = view
        return view
