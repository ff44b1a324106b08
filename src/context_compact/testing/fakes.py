"""A deterministic summarizer for benchmarks: realistic length, no model, every call counted.

Its text is the extractive summary of what it was given (rolling over the previous one when
the engine passes it), padded or cut to ``target_chars`` (2,400 chars, about 600 tokens: the
size of the summaries we saw in the recorded Claude Code compaction in
``tests/data/trajectories``, which ran to a few thousand characters). It records the tokens
it was sent and returned, so a bench can price the calls, and each summary's
``summary_score`` against what it was shown, so a bench can report retention.

It is a ``Summarizes`` (``summarize(SummaryRequest)``) for the engines, and a callable
``(messages, previous=None, request=None) -> str`` for the peers' frameworks, which call a
model with a prompt (``context_compact_bench.peers``).
"""

from __future__ import annotations

from typing import Any

from ..sizing import text_tokens
from ..summary.contract import SummaryRequest
from ..summary.extract import extractive_summary, summary_score
from ..summary.facts import Readings, facts
from ..summary.llm import summary_input
from ..summary.prompts import summary_focus


class BenchSummarizer:
    def __init__(self, target_chars: int = 2_400, input_limit: int = 80_000) -> None:
        self.target_chars = target_chars
        self.input_limit = input_limit
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.scores: list[float] = []
        # Requests that continue an earlier one, priced as sent by the bench's replay
        # (``testing/summary_cost.py``): their messages, and the tokens after them.
        self.sends: list[tuple[list[Any], int]] = []

    def summarize(self, ask: SummaryRequest) -> str:
        """The summarizer contract: the previous summary rolled over, the focus a note after
        the messages (what it reads and counts, as a model would be told it)."""
        shown = ask.visible_messages()
        if ask.focus:
            shown = [*shown, summary_focus(ask.focus)]
        return self(shown, ask.previous, ask.request, readings=ask.readings)

    def __call__(
        self,
        messages: list[Any],
        previous: str | None = None,
        request: str | None = None,
        *,
        readings: Readings | None = None,
    ) -> str:
        self.calls += 1
        sent = summary_input(messages, self.input_limit)
        self.input_tokens += text_tokens(sent + (previous or ""))
        found = facts(messages, readings)  # read once, for the summary and its score
        text = extractive_summary(messages, request, self.target_chars, previous, found=found)
        overall = summary_score(text, messages, found=found).overall
        if overall is not None:
            self.scores.append(overall)
        if len(text) < self.target_chars:
            filler = " State notes: progress recorded; nothing pending beyond the above."
            room = self.target_chars - len(text) - 1
            text += "\n" + (filler * (1 + room // len(filler)))[:room].strip()
        self.output_tokens += text_tokens(text)
        return text

    @property
    def retention(self) -> float | None:
        """Mean ``summary_score(...).overall`` over the calls (None before any)."""
        return sum(self.scores) / len(self.scores) if self.scores else None
