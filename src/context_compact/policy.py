"""Every threshold of the compaction pipeline, in one frozen dataclass.

``Policy.seed()`` is the seed's preset (SPEC S-0.3), exact: limits in characters, the
four stages as the seed runs them. ``Policy.default()`` is ours (DESIGN.md, "Principles of
the default policy"): limits in tokens of the request as sent, an append-only session log
with a derived view, high/low-water clearing, nothing lost. Overrides replace fields by
name; an unknown name is an error, not a silently ignored typo.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Literal

Preset = Literal["seed", "default"]
Unit = Literal["chars", "tokens"]


@dataclass(frozen=True)
class Policy:
    preset: Preset = "seed"
    unit: Unit = "chars"
    # S-0.3, the seed's constants (names follow the seed's, lower-cased).
    context_limit: int = 50_000
    tool_result_batch_limit: int = 200_000
    large_result_limit: int = 30_000
    preview_chars: int = 2_000
    snip_max_messages: int = 50
    snip_head: int = 3
    keep_recent_results: int = 3
    micro_threshold: int = 120
    summary_input_limit: int = 80_000
    summary_max_tokens: int = 2_000
    keep_recent_messages: int = 5
    max_reactive_retries: int = 1
    # Ours (used by the default preset only).
    high_water: float = 0.85
    low_water: float = 0.40
    clear_at_least: int = 2_000
    keep_recent_turns: int = 3
    batch_budget: float = 0.25
    large_result_share: float = 0.10
    summary_target: float = 0.40
    max_summary_failures: int = 3
    max_over_limit: int = 3
    summary_timeout: float = 120.0
    reserve_tokens: int = 8_000
    model: str | None = None
    # The seed prints `[auto compact]` and `[transcript saved: PATH]` (S-4.1); a host that
    # shows CompactionEvents itself (our CLI, the bench) turns this off.
    echo: bool = False

    @classmethod
    def seed(cls, **overrides: Any) -> Policy:
        """The seed's preset (SPEC S-0.3), every constant a field; it prints as the seed does."""
        return _with(cls(echo=True), overrides)

    @classmethod
    def default(cls, **overrides: Any) -> Policy:
        """Our default: token budgets, a view over an append-only log, nothing lost.

        ``context_limit`` defaults to the window of ``model`` (``sizing.context_window``)
        minus ``reserve_tokens`` for the reply; without a model, 200,000 tokens.
        """
        from .sizing import context_window

        model = overrides.get("model")
        reserve = overrides.get("reserve_tokens", cls.reserve_tokens)
        limit = context_window(model) - reserve
        base = cls(
            preset="default",
            unit="tokens",
            context_limit=limit,
            large_result_limit=8_000,
            preview_chars=1_500,
            summary_input_limit=160_000,
        )
        return _with(base, overrides)


def _with(base: Policy, overrides: dict[str, Any]) -> Policy:
    known = {f.name for f in fields(Policy)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise TypeError(f"unknown Policy field(s): {', '.join(unknown)}")
    policy = replace(base, **overrides)
    _validate(policy)
    return policy


def _validate(policy: Policy) -> None:
    if policy.context_limit <= 0:
        raise ValueError(f"context_limit must be positive, got {policy.context_limit}")
    if not 0 < policy.low_water < policy.high_water <= 1:
        raise ValueError(
            f"need 0 < low_water < high_water <= 1, got {policy.low_water}, {policy.high_water}"
        )
    if policy.snip_head < 1 or policy.snip_max_messages <= policy.snip_head:
        raise ValueError("need 1 <= snip_head < snip_max_messages")
    if policy.keep_recent_messages < 0 or policy.keep_recent_results < 0:
        raise ValueError("keep_recent_* must be >= 0")
