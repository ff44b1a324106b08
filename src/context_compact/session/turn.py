"""The turn in progress, tracked as messages are logged: where it starts and whether it thinks.

A turn is the run of assistant messages (and the tool results between them) after a run of
user messages that holds no tool result. When its first assistant message opens with a
thinking block, the Messages API wants the first assistant message of whatever is kept of
that turn to open with one too (Anthropic's extended-thinking guide, tool use section): a
cut inside the turn is legal only there.

Invariant: ``first`` is the position of the turn's first assistant message, or ``None``
before any assistant message and after a summary closed the turn (the next assistant
message opens a new one).
"""

from __future__ import annotations

from ..messages import Message, is_tool_result, opens_with_thinking


class Turn:
    def __init__(self) -> None:
        self.first: int | None = None
        self.thinks = False
        self._run_ends_turn = True  # the user run just before holds no tool result
        self._run_open = False  # the last logged message is a user message

    def logged(self, seq: int, message: Message) -> None:
        if message.get("role") == "user":
            results = is_tool_result(message)
            self._run_ends_turn = (self._run_ends_turn or not self._run_open) and not results
            self._run_open = True
            return
        # A new turn after a run of user messages without results (or the first message).
        if (self._run_open and self._run_ends_turn) or self.first is None:
            self.first, self.thinks = seq, opens_with_thinking(message)
        self._run_open = False

    def close(self) -> None:
        """The view now ends with user messages that hold no tool result: the turn in
        progress is over, the next assistant message opens a new one."""
        self.first, self.thinks = None, False
        self._run_open, self._run_ends_turn = True, True

    def legal_cut(self, seq: int, message: Message) -> bool:
        """Whether the kept part may start at assistant message ``seq``: anywhere before the
        turn in progress; inside it only where a thinking block opens the message, when the
        turn thinks (else the API answers 400: the final turn must open with thinking)."""
        if self.first is None or seq < self.first or not self.thinks:
            return True
        return opens_with_thinking(message)


__all__ = ["Turn"]
