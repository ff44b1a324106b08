"""The strategies the bench prices side by side, one small module each.

Every strategy is an engine of the registry (``registry.py``), driven through a
``Compactor`` built from a ``Setup`` (equal budget, its own store and counted summarizer), so
the bench measures exactly what a library user of that policy would run.
The peers are written from their published behaviour; each module's docstring cites it.
``register_peers()`` registers them (``build`` calls it, the CLI's ``--policy`` does, and the
registry calls it through the entry point ``context_compact.policies`` the first time a peer's
name is asked for), so ``Policy.named("codex")`` and ``--policy codex`` build them like our
own engines.

    none                  no management (reports where it overflows)
    seed                  Compactor(Policy.seed()), limit 4 x budget chars
    default               Compactor(Policy.default(context_limit=budget))
    masking               last 10 observations verbatim (Lindenbauer et al. 2025, SWE-agent)
    openhands-summarizer  OpenHands default condenser (max_size=80, keep_first=4, window)
    anthropic-clearing    clear_tool_uses_20250919 (trigger min(100k, budget), keep 3)
    codex                 Codex CLI auto-compact (summary + recent user messages <= 20k)
    langchain-summarizer  LangChain SummarizationMiddleware (80% trigger, keep last 20 messages)
    llamaindex-summary    LlamaIndex ChatSummaryMemoryBuffer (0.75 x window, history start rule)
    default-native        the default, its summaries the provider's compaction (native=True)
    anthropic-compaction  compact_20260112 (trigger min(150k, 0.75 x budget), drops all before)
    openai-compaction     Responses compaction (same trigger; user messages + encrypted item)

``bench --real-peers`` runs the real LangChain, LlamaIndex and OpenHands code beside these
models and checks each model against its peer (``peers/``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from context_compact.compactor import Compactor
from context_compact.registry import REGISTRY, Registry, entry, policy_at
from context_compact.store.base import Store
from context_compact.testing.summary_cost import ContinuingSummarizer

from . import (
    anthropic_clearing,
    codex,
    langchain_summarizer,
    llamaindex_summary,
    masking,
    native,
    none,
    openhands,
)

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
    "langchain-summarizer",
    "llamaindex-summary",
    "default-native",
    "anthropic-compaction",
    "openai-compaction",
)


VARIANTS: dict[str, str] = {"default-continued": "default", "default-handoff": "default"}
"""Bench-only rows: an engine of the registry with another summarizer or policy, run by name
(``--strategies``), not among the default rows. ``default-continued`` is the default with
``LLMSummarizer(continue_cache=True)``'s requests (``summary_cost.py``); ``default-handoff``
the default under ``Policy.default(handoff=True)`` (a fresh context where a summary would be
made, no summarizer call)."""
CONTINUED = ("default-continued",)
OVERRIDES: dict[str, dict[str, Any]] = {"default-handoff": {"handoff": True}}

STRATEGIES: tuple[str, ...] = (*NAMES, *VARIANTS)


def register_peers(registry: Registry = REGISTRY) -> None:
    """Register the peers with ``registry`` (the library's by default; the registry's
    entry point passes itself). Again: the same entries."""
    register = registry.register
    register("none", none.engine, "no management: the whole history every time")
    register("masking", masking.engine, "observation masking, last 10 results (SWE-agent)")
    register("openhands-summarizer", openhands.engine, "OpenHands LLMSummarizingCondenser")
    register("anthropic-clearing", anthropic_clearing.engine, "Anthropic clear_tool_uses_20250919")
    register("codex", codex.engine, "Codex CLI auto-compact")
    register(
        "langchain-summarizer", langchain_summarizer.engine, "LangChain SummarizationMiddleware"
    )
    register("llamaindex-summary", llamaindex_summary.engine, "LlamaIndex ChatSummaryMemoryBuffer")
    register("default-native", native.default_native_engine, "ours, the provider's compaction")
    register("anthropic-compaction", native.anthropic_engine, "Anthropic compact_20260112")
    register("openai-compaction", native.openai_engine, "OpenAI Responses compaction")


def build(name: str, setup: Setup) -> Compactor:
    """A Compactor over strategy ``name`` from the registry, at the bench's budget (tokens; the
    seed's characters are ``CHARS_PER_TOKEN`` x the budget)."""
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}")
    register_peers()
    engine = VARIANTS.get(name, name)
    scale = CHARS_PER_TOKEN if entry(engine).unit == "chars" else 1
    summarizer = setup.summarizer
    if name in CONTINUED:  # its summary requests continue the agent's own
        summarizer = ContinuingSummarizer(summarizer)
    policy = policy_at(engine, scale * setup.budget)
    if name in OVERRIDES:
        policy = replace(policy, **OVERRIDES[name])  # type: ignore[type-var]
    compactor = Compactor(policy, setup.store, summarizer)
    compactor.engine.overhead(setup.overhead)
    return compactor


__all__ = [
    "CHARS_PER_TOKEN",
    "NAMES",
    "STRATEGIES",
    "VARIANTS",
    "Setup",
    "build",
    "register_peers",
]
