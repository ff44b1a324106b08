"""pytest-benchmark timings of ``prepare`` (run once, untimed, in the normal suite).

    python -m pytest tests/test_perf.py --benchmark-enable --benchmark-only

These are measurements, not assertions: the goals (default p50 under 1 ms, flat with
history length, 10x faster than the seed at 5,000 messages) are reported by
``context-compact bench``, never enforced by a timed test.
"""

from __future__ import annotations

from typing import Any

import pytest

from context_compact import Compactor, MemoryStore, Policy
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session

SESSION = synthetic_session(1_000, seed=11)


def history(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": SESSION.request}]
    for turn in SESSION.turns[:turns]:
        messages += [turn.assistant, turn.results]
    return messages


@pytest.mark.parametrize("turns", [50, 500])
def test_default_prepare_per_turn_after_a_long_session(benchmark: Any, turns: int) -> None:
    compactor = Compactor(Policy.default(context_limit=12_500), MemoryStore(), BenchSummarizer())
    view = compactor.prepare([{"role": "user", "content": SESSION.request}], "r")
    for turn in SESSION.turns[:turns]:
        view = compactor.prepare([*view, turn.assistant, turn.results], "r")
    # Re-sending the same view: the steady per-turn cost once everything is synced.
    result = benchmark(compactor.prepare, view, "r")
    assert result == view


@pytest.mark.parametrize("turns", [50, 500])
def test_seed_prepare_over_a_full_history(benchmark: Any, turns: int) -> None:
    compactor = Compactor(Policy.seed(echo=False), MemoryStore(), BenchSummarizer())
    messages = history(turns)
    result = benchmark(compactor.prepare, messages, "r")
    assert len(result) <= len(messages)
