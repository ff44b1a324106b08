"""How ``prepare`` time grows with history length.

One synthetic session is generated long enough for the largest size; then, per size N
(messages of history):

* ``default``: the stateful Compactor is driven turn by turn through the session, the way
  an agent loop drives it; the calls made once the log holds N messages are timed: the
  per-turn cost of a session of that length (the log is already synced).
* ``seed``: one ``prepare`` over the caller's full N-message history (the seed is
  stateless: that is the call an agent holding its full history makes each turn), timed
  ``repeats`` times.
* ``seed-loop``: the seed driven by its own loop (it is handed back its own, bounded view
  each turn): per-turn cost once N messages have been produced. Cheap because the seed's
  view forgot the history; shown for completeness.

Times are medians (ms) of wall-clock ``perf_counter`` around ``prepare``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..compactor import Compactor
from ..policy import Policy
from ..store.memory import MemoryStore
from .fakes import BenchSummarizer
from .workload import synthetic_session


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


def measure_scaling(
    sizes: Sequence[int] = (100, 1_000, 5_000, 20_000),
    budget: int = 12_500,
    samples: int = 20,
    repeats: int = 3,
    seed_loop: bool = True,
    on_step: Callable[[str], None] | None = None,
) -> list[ScalingPoint]:
    sizes = sorted(sizes)
    turns = (max(sizes) + 2 * samples) // 2 + 1
    workload = synthetic_session(turns, seed=7)
    history: list[Any] = [{"role": "user", "content": workload.request}]
    for turn in workload.turns:
        history += [turn.assistant, turn.results]
    request = workload.request
    points: list[ScalingPoint] = []

    def loop(name: str, policy: Policy, how: str) -> None:
        compactor = Compactor(policy, MemoryStore(), BenchSummarizer())
        for n, t in _loop_times(compactor, history, request, sizes, samples).items():
            points.append(ScalingPoint(name, n, statistics.median(t), max(t), len(t), how))
        if on_step:
            on_step(name)

    loop(
        "default",
        Policy.default(context_limit=budget),
        "per-turn call, log already synced (agent loop)",
    )
    seed_policy = Policy.seed(context_limit=4 * budget, echo=False)
    for n in sizes:
        compactor = Compactor(seed_policy, MemoryStore(), BenchSummarizer())
        size = n if n % 2 == 1 else n - 1  # end on a tool-result message
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            compactor.prepare(history[:size], request)
            times.append((time.perf_counter() - started) * 1000)
        points.append(
            ScalingPoint(
                "seed",
                n,
                statistics.median(times),
                max(times),
                repeats,
                "one prepare over the full N-message history",
            )
        )
        if on_step:
            on_step(f"seed {n}")
    if seed_loop:
        loop("seed-loop", seed_policy, "per-turn call in the seed's own loop (bounded view)")
    return points
