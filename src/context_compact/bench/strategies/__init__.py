"""The strategies the bench prices side by side, one small module each.

Every strategy is an engine of the registry (``registry.py``), driven through a
``Compactor`` built from a ``Setup`` (equal budget, its own store and counted summarizer), so
the bench measures exactly what a library user of that policy would run.
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

from dataclasses import dataclass
from typing import Any

from ...compactor import Compactor
from ...policy import Policy
from ...registry import policy_for
from ...store.base import Store

# The seed counts characters (S-0.2); at ~4 characters a token its limit is 4 x the budget.
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Setup:
    budget: int
    store: Store
    summarizer: Any
    overhead: int = 0


NAMES: tuple[str, ...] = (
    "none",
    "seed",
    "default",
    "masking",
    "openhands-summarizer",
    "anthropic-clearing",
    "codex",
)


def build(name: str, setup: Setup) -> Compactor:
    """A Compactor over strategy ``name`` from the registry, at the bench's budget."""
    if name not in NAMES:
        raise ValueError(f"unknown strategy {name!r}; known: {', '.join(NAMES)}")
    if name == "seed":
        policy: Any = Policy.seed(context_limit=CHARS_PER_TOKEN * setup.budget, echo=False)
    elif name == "default":
        policy = Policy.default(context_limit=setup.budget)
    else:
        policy = policy_for(name, context_limit=setup.budget)
    compactor = Compactor(policy, setup.store, setup.summarizer)
    compactor.engine.overhead(setup.overhead)
    return compactor


__all__ = ["NAMES", "Setup", "build"]
