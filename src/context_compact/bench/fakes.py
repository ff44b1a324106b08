"""A deterministic summarizer for benchmarks: realistic length, no model, every call counted.

Its text is the extractive summary of what it was given, padded or cut to ``target_chars``
(2,400 chars, about 600 tokens: the size of the summaries we saw in the recorded Claude
Code compaction in ``shared/data/trajectories``, which ran to a few thousand characters).
It records the tokens it was sent and returned, so a bench can price the calls.
"""

from __future__ import annotations

from typing import Any

from ..sizing import text_tokens
from ..summarize import extractive_summary, summary_input


class BenchSummarizer:
    def __init__(self, target_chars: int = 2_400, input_limit: int = 80_000) -> None:
        self.target_chars = target_chars
        self.input_limit = input_limit
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0

    def __call__(self, messages: list[Any]) -> str:
        self.calls += 1
        self.input_tokens += text_tokens(summary_input(messages, self.input_limit))
        text = extractive_summary(messages, limit=self.target_chars)
        if len(text) < self.target_chars:
            filler = " State notes: progress recorded; nothing pending beyond the above."
            text += (filler * (1 + (self.target_chars - len(text)) // len(filler)))[
                : self.target_chars - len(text)
            ]
        self.output_tokens += text_tokens(text)
        return text
