"""One registry of engines, shared by the library, ``--policy`` in the CLI and the bench.

    policy = policy_for("codex", context_limit=12_500)
    engine = build_engine(policy, env)          # what Compactor does

``seed`` and ``default`` are this library's engines (``seed/``, ``session/``). The others are
the peers the bench prices (``bench/strategies/``), written from their published behaviour;
they implement the same Engine protocol, so any of them can drive a real loop too (they keep
no durable log and some of them lose content: that is what the bench measures).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .engine import Engine, Env
from .policy import Policy, SeedPolicy, SessionPolicy, with_overrides


@dataclass(frozen=True)
class PeerPolicy:
    """A bench peer used as a policy: its name and its budget in tokens."""

    engine: str
    """The registry name of the peer."""
    context_limit: int = 192_000
    """The token budget the peer keeps requests under (its trigger or limit)."""
    unit = "tokens"
    max_reactive_retries: int = 1
    """Reactive compactions the agent loop tries per refused call."""


@dataclass(frozen=True)
class Entry:
    policy: Callable[..., Any]
    engine: Callable[[Any, Env], Engine]
    about: str


def _seed_engine(policy: SeedPolicy, env: Env) -> Engine:
    from .seed.engine import SeedEngine

    return SeedEngine(policy, env)


def _session_engine(policy: SessionPolicy, env: Env) -> Engine:
    from .session.engine import SessionEngine

    return SessionEngine(policy, env)


def _peer(name: str, module: str, about: str) -> Entry:
    def policy(**overrides: Any) -> PeerPolicy:
        return with_overrides(PeerPolicy(engine=name), overrides)

    def engine(policy: PeerPolicy, env: Env) -> Engine:
        mod = importlib.import_module(f".bench.strategies.{module}", __package__)
        built: Engine = mod.engine(policy, env)
        return built

    return Entry(policy, engine, about)


ENGINES: dict[str, Entry] = {
    "default": Entry(Policy.default, _session_engine, "ours: durable log, view, nothing lost"),
    "seed": Entry(Policy.seed, _seed_engine, "the seed's four stages, exact (SPEC.md)"),
    "none": _peer("none", "none", "no management: the whole history every time"),
    "masking": _peer("masking", "masking", "observation masking, last 10 results (SWE-agent)"),
    "openhands-summarizer": _peer(
        "openhands-summarizer", "openhands", "OpenHands LLMSummarizingCondenser"
    ),
    "anthropic-clearing": _peer(
        "anthropic-clearing", "anthropic_clearing", "Anthropic clear_tool_uses_20250919"
    ),
    "codex": _peer("codex", "codex", "Codex CLI auto-compact"),
}
NAMES: tuple[str, ...] = tuple(ENGINES)


def entry(name: str) -> Entry:
    try:
        return ENGINES[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(NAMES)}") from None


def policy_for(name: str, **overrides: Any) -> Any:
    """The policy object of engine ``name`` with fields overridden by name."""
    return entry(name).policy(**overrides)


def build_engine(policy: Any, env: Env) -> Engine:
    return entry(policy.engine).engine(policy, env)


__all__ = ["ENGINES", "NAMES", "Entry", "PeerPolicy", "build_engine", "entry", "policy_for"]
