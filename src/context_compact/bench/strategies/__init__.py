"""The strategies the bench prices side by side, one small module each.

Every strategy is an object with a ``name`` and ``prepare(messages, active_request) ->
messages``, built from a ``Setup`` (equal budget, its own store and counted summarizer).
The peers are written from their published behaviour; each module's docstring cites it.

    none                  no management (reports where it overflows)
    seed                  Compactor(Policy.seed()), limit 4 x budget chars
    default               Compactor(Policy.default(context_limit=budget))
    masking               last 10 observations verbatim (Lindenbauer et al. 2025, SWE-agent)
    openhands-summarizer  LLMSummarizingCondenser(max_size=120, keep_first=4)
    anthropic-clearing    clear_tool_uses_20250919 (trigger min(100k, budget), keep 3)
    codex                 Codex CLI auto-compact (summary + recent user messages <= 20k)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...store.base import Store
from . import anthropic_clearing, codex, compactor, masking, none, openhands


@dataclass(frozen=True)
class Setup:
    budget: int
    store: Store
    summarizer: Any
    overhead: int = 0


STRATEGIES: dict[str, Callable[[Setup], Any]] = {
    "none": none.build,
    "seed": compactor.build_seed,
    "default": compactor.build_default,
    "masking": masking.build,
    "openhands-summarizer": openhands.build,
    "anthropic-clearing": anthropic_clearing.build,
    "codex": codex.build,
}
NAMES: tuple[str, ...] = tuple(STRATEGIES)


def build(name: str, setup: Setup) -> Any:
    try:
        factory = STRATEGIES[name]
    except KeyError:
        raise ValueError(f"unknown strategy {name!r}; known: {', '.join(NAMES)}") from None
    return factory(setup)


__all__ = ["NAMES", "STRATEGIES", "Setup", "build"]
