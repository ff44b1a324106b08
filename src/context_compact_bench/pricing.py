"""What a replay costs in US dollars.

Default prices: Claude Sonnet 4.5 (and Sonnet 4), from Anthropic's pricing page
(https://docs.claude.com/en/docs/about-claude/pricing, read 2025-11): base input $3 per
million tokens, output $15; prompt caching: 5-minute cache writes 1.25x base input, cache
reads 0.1x. Summary calls are input plus output; the part of a summary request that repeats
the previous request's prefix (``summary_cached_tokens``) is priced as a cache read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SOURCE = "Anthropic pricing page, Claude Sonnet 4.5, read 2025-11"


@dataclass(frozen=True)
class Pricing:
    input_per_mtok: float = 3.00
    output_per_mtok: float = 15.00
    cache_write_factor: float = 1.25
    cache_read_factor: float = 0.10
    source: str = SOURCE

    def cost(self, replay: Any) -> float:
        """US dollars for a ``Replay``: cached input, summary calls and all output."""
        base = self.input_per_mtok / 1e6
        out = self.output_per_mtok / 1e6
        return float(
            replay.cache_read * self.cache_read_factor * base
            + replay.cache_write * self.cache_write_factor * base
            + self.summary_input(replay) * base
            + (replay.summary_output_tokens + replay.output_tokens) * out
        )

    def summary_input(self, replay: Any) -> float:
        """Summary input in base-input-token units, priced as sent: the cached part at the
        cache-read rate, the rest plain. Never above ``summary_input_tokens``."""
        cached = min(getattr(replay, "summary_cached_tokens", 0), replay.summary_input_tokens)
        return float(replay.summary_input_tokens - cached + cached * self.cache_read_factor)

    def as_dict(self) -> dict[str, Any]:
        return {
            "input_per_mtok": self.input_per_mtok,
            "output_per_mtok": self.output_per_mtok,
            "cache_write_factor": self.cache_write_factor,
            "cache_read_factor": self.cache_read_factor,
            "source": self.source,
        }
