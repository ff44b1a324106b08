"""``SeedPolicy``: the settings of the seed engine (``seed/``), the seed's constants exactly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..overrides import positive, with_overrides


@dataclass(frozen=True)
class SeedPolicy:
    """The seed's preset, exact: each constant of the seed's algorithm is a field (named after
    it in capitals below). Every limit is in characters."""

    engine: ClassVar[str] = "seed"
    unit: ClassVar[str] = "chars"

    context_limit: int = 50_000
    """CONTEXT_CHAR_LIMIT: above this, after stages 1-3, summarize (stage 4)."""
    tool_result_batch_limit: int = 200_000
    """TOOL_RESULT_BATCH_CHAR_LIMIT: newest batch total before stage 1 acts."""
    large_result_limit: int = 30_000
    """LARGE_RESULT_CHAR_LIMIT: only results longer than this are persisted by stage 1."""
    preview_chars: int = 2_000
    """Characters of a persisted result kept in context."""
    snip_max_messages: int = 50
    """Stage 2 acts only above this many messages."""
    snip_head: int = 3
    """First messages kept by stage 2."""
    keep_recent_results: int = 3
    """KEEP_RECENT_RESULTS: newest tool results stage 3 never touches."""
    micro_threshold: int = 120
    """Older results of at most this length are left alone by stage 3."""
    summary_input_limit: int = 80_000
    """SUMMARY_INPUT_CHAR_LIMIT: most characters sent to the summarizer."""
    summary_max_tokens: int = 2_000
    """Output budget of the summary call."""
    keep_recent_messages: int = 5
    """KEEP_RECENT_MESSAGES: messages kept verbatim by reactive compaction."""
    max_reactive_retries: int = 1
    """MAX_REACTIVE_RETRIES: reactive compactions per failing call."""
    echo: bool = True
    """Print ``[auto compact]`` and ``[transcript saved: PATH]`` on stdout, as the seed does
    when it summarizes; a host that shows CompactionEvents itself (our CLI, the bench) turns
    this off. The lines are logged (logger ``context_compact.seed``, INFO) either way."""

    def __post_init__(self) -> None:
        positive(self, "context_limit", "tool_result_batch_limit", "snip_max_messages")
        if self.snip_head < 1 or self.snip_max_messages <= self.snip_head:
            raise ValueError("need 1 <= snip_head < snip_max_messages")
        if self.keep_recent_messages < 0 or self.keep_recent_results < 0:
            raise ValueError("keep_recent_* must be >= 0")


def seed_policy(**overrides: Any) -> SeedPolicy:
    """``Policy.seed``: the seed's preset with fields overridden by name."""
    return with_overrides(SeedPolicy(), overrides)


__all__ = ["SeedPolicy", "seed_policy"]
