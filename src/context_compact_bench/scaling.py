"""``measure_scaling``: ``prepare`` times by history length, in process (part of ``run_bench``).

One synthetic session long enough for the largest N (messages); for each N:

* ``<policy> loop``: the compactor driven turn by turn the way an agent loop drives it
  (handed back what it returned plus the new turn); the calls made once the session holds N
  messages are timed: the per-turn cost at that length.
* ``<policy> cold``: one ``prepare`` on a fresh compactor over a whole N-message history
  (an agent that starts with a long history, or passes its full history to a stateless
  policy), timed ``repeats`` times.

Like is set against like: per turn against per turn, cold against cold. Times are medians
(ms) of wall-clock ``perf_counter`` around ``prepare``, in this process, on a MemoryStore.


The scaling suite (``suite.py``, ``bench --scaling`` alone) measures long sessions, memory
and files, each configuration in its own process.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from context_compact.compactor import Compactor
from context_compact.engine import PolicyLike
from context_compact.policy import Policy
from context_compact.store import MemoryStore
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session


@dataclass(frozen=True)
class ScalingPoint:
    strategy: str
    messages: int
    p50_ms: float
    max_ms: float
    samples: int
    how: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _loop_times(
    compactor: Compactor, history: list[Any], request: str, sizes: Sequence[int], samples: int
) -> dict[int, list[float]]:
    """Drive ``compactor`` turn by turn; collect the times of the calls after each size."""
    wanted = sorted(sizes)
    times: dict[int, list[float]] = {n: [] for n in wanted}
    view = compactor.prepare(history[:1], request)
    end = 1
    while end + 2 <= len(history):
        step = history[end : end + 2]
        end += 2
        started = time.perf_counter()
        view = compactor.prepare([*view, *step], request)
        elapsed = (time.perf_counter() - started) * 1000
        for n in wanted:
            if n <= end and len(times[n]) < samples:
                times[n].append(elapsed)
        if all(len(t) >= samples for t in times.values()):
            break
    return times


def _cold(policy: Any, history: list[Any], request: str, n: int, repeats: int) -> list[float]:
    size = n if n % 2 == 1 else n - 1  # end on a tool-result message
    times = []
    for _ in range(repeats):
        compactor = Compactor(policy, MemoryStore(), BenchSummarizer())
        started = time.perf_counter()
        compactor.prepare(history[:size], request)
        times.append((time.perf_counter() - started) * 1000)
    return times


def measure_scaling(
    sizes: Sequence[int] = (100, 1_000, 5_000, 20_000),
    budget: int = 12_500,
    samples: int = 20,
    repeats: int = 3,
    seed_loop: bool = True,
    on_step: Callable[[str], None] | None = None,
) -> list[ScalingPoint]:
    """Like for like: each policy per turn in its loop, and each cold (one call, whole history).

    ``seed_loop=False`` skips the loop rows (the slower part) for a quick check."""
    sizes = sorted(sizes)
    turns = (max(sizes) + 2 * samples) // 2 + 1
    workload = synthetic_session(turns, seed=7)
    history: list[Any] = [{"role": "user", "content": workload.request}]
    for turn in workload.turns:
        history += [turn.assistant, turn.results]
    request = workload.request
    policies: dict[str, PolicyLike] = {
        "default": Policy.default(context_limit=budget),
        "seed": Policy.seed(context_limit=4 * budget, echo=False),
    }
    points: list[ScalingPoint] = []
    if seed_loop:
        for name, policy in policies.items():
            compactor = Compactor(policy, MemoryStore(), BenchSummarizer())
            for n, t in _loop_times(compactor, history, request, sizes, samples).items():
                points.append(
                    ScalingPoint(
                        f"{name} loop",
                        n,
                        statistics.median(t),
                        max(t),
                        len(t),
                        "per-turn call once the session holds N messages (agent loop)",
                    )
                )
            if on_step:
                on_step(f"{name} loop")
    for name, policy in policies.items():
        for n in sizes:
            times = _cold(policy, history, request, n, repeats)
            points.append(
                ScalingPoint(
                    f"{name} cold",
                    n,
                    statistics.median(times),
                    max(times),
                    repeats,
                    "one prepare on a fresh compactor over the whole N-message history",
                )
            )
            if on_step:
                on_step(f"{name} cold {n}")
    return points
