"""``masking``: observation masking, keep the last M observations verbatim.

Source: Lindenbauer et al., "The Complexity Trap: Simple Observation Masking Is as Efficient
as LLM Summarization for Agent Context Management" (2025), which masks all but the last
M = 10 observations, as SWE-agent's ``LastNObservations`` history processor does
(``sweagent/agent/history_processors.py``): an elided observation's text becomes
``Old environment output: (N lines omitted)``; ``polling`` = 1 (the default) moves the
window every step. SWE-agent also cuts an observation longer than
``max_observation_length`` = 100,000 characters to its head when it records it
(``sweagent/agent/agents.py``).

Here an observation is one ``tool_result`` block. The agent's log keeps every result, but
the model is given no reference to a masked one, so a masked result counts as lost.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from context_compact.engine import Env
from context_compact.messages import Message, blocks, result_text

from .base import LoggedStrategy, result_positions, with_result

KEEP = 10
MAX_OBSERVATION_CHARS = 100_000


def placeholder(text: str) -> str:
    return f"Old environment output: ({len(text.splitlines())} lines omitted)"


class ObservationMasking(LoggedStrategy):
    name = "masking"

    def __init__(self, keep: int = KEEP, max_chars: int = MAX_OBSERVATION_CHARS) -> None:
        self.keep = keep
        self.max_chars = max_chars
        super().__init__()

    def reset(self) -> None:
        super().reset()
        self._positions: list[tuple[int, int]] = []
        self._indexed = 0

    def admit(self, message: Message) -> Message:
        replaced = {
            bi: result_text(blocks(message)[bi])
            for bi in result_positions(message)
            if len(result_text(blocks(message)[bi])) > self.max_chars
        }
        if not replaced:
            return message
        return with_result(
            message,
            {
                bi: f"{text[: self.max_chars]}\n<NOTE>Observation cut at {self.max_chars:,} "
                f"characters; {len(text) - self.max_chars:,} characters were elided.</NOTE>"
                for bi, text in replaced.items()
            },
        )

    def prepare(self, messages: list[Message], active_request: str) -> list[Message]:
        self.sync(messages)
        for li in range(self._indexed, len(self.log)):
            self._positions.extend((li, bi) for bi in result_positions(self.log[li]))
        self._indexed = len(self.log)
        masked: dict[int, tuple[int, ...]] = {}
        for li, bi in self._positions[: max(0, len(self._positions) - self.keep)]:
            masked[li] = (*masked.get(li, ()), bi)
        view = []
        for li, message in enumerate(self.log):
            which = masked.get(li)
            if not which:
                view.append(message)
                continue
            view.append(self.rendered(li, which, partial(self._mask, message, which)))
        return self.returned(view)

    @staticmethod
    def _mask(message: Message, which: tuple[int, ...]) -> Message:
        return with_result(
            message, {bi: placeholder(result_text(blocks(message)[bi])) for bi in which}
        )


def engine(policy: Any, env: Env) -> ObservationMasking:
    return ObservationMasking()
