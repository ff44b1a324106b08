"""``run_bench(config) -> BenchReport``: every strategy priced side by side.

Workloads: synthetic coding sessions from the seeded generator (``testing/workload.py``), the
real recorded sessions under ``config.trajectories`` (read by ``context_compact.loaders``)
and, with ``long_turn`` steps, the long-turn workload (``longturn.py``: one request, then
only tool calls, thinking on) at each of ``long_turn_budgets``.
Every strategy replays every workload at the same budget (tokens of the request as sent),
with its own ``MemoryStore`` and counted ``BenchSummarizer``; ``replay`` measures it and
``Pricing`` prices it. ``scaling`` times ``prepare`` against history length.

A row is comparable to another of the same workload only where both stayed within the
budget: calls over it (``over_budget_calls``) are requests a real API would refuse.
``findings`` names, per workload, the cheapest strategy that lost nothing and stayed
within the budget, and every place a peer beats the default.
"""

from __future__ import annotations

import logging
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from context_compact.sizing import text_tokens
from context_compact.store.memory import MemoryStore
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.replay import Replay, replay
from context_compact.testing.script import Script, from_session, from_workload
from context_compact.testing.trajectories import ENV_TRAJECTORIES as ENV_TRAJECTORIES
from context_compact.testing.trajectories import default_trajectories as default_trajectories
from context_compact.testing.workload import synthetic_session

from .answerer import Answerer
from .bench_config import BenchConfig as BenchConfig
from .bench_report import BenchReport as BenchReport
from .bench_report import BenchRow as BenchRow
from .bench_report import mean_retention as mean_retention
from .longturn import at_budget, long_turn_script
from .pricing import Pricing
from .probing import ProbeTracker, recall_of
from .scaling import ScalingPoint, measure_scaling
from .strategies import STRATEGIES, Setup, build

ROOT = "/memory"

Progress = Callable[[int, int, str], None]


def machine_info() -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        package = version("context-compact")
    except PackageNotFoundError:
        package = "unknown"
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "context_compact": package,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def real_scripts(config: BenchConfig, skipped: list[str]) -> list[Script]:
    """The recorded sessions, as scripts; ``skipped`` says why there are none."""
    if not config.real:
        return []
    directory = config.trajectories
    if directory is None or not Path(directory).is_dir():
        skipped.append(f"real sessions: no trajectories directory at {directory}")
        return []
    try:
        from context_compact.loaders import load_all
    except ImportError as error:  # the loaders are optional for the bench
        skipped.append(f"real sessions: loaders unavailable ({error})")
        return []
    # The loaders log each repair they make; the bench only needs the sessions.
    loader_log = logging.getLogger("context_compact.loaders")
    level = loader_log.level
    loader_log.setLevel(logging.ERROR)
    failures: list[Any] = []
    try:
        sessions = load_all(directory, failures=failures)
    finally:
        loader_log.setLevel(level)
    for failure in failures:  # every file not loaded is named, with why
        skipped.append(f"{failure.path}: could not load: {failure.reason}")
    scripts = [from_session(s) for s in sessions]
    scripts = [s for s in scripts if s.turns >= 1]
    if config.max_sessions is not None and len(scripts) > config.max_sessions:
        by_size = sorted(scripts, key=lambda s: -sum(len(n) for n in s.needles))
        keep = {id(s) for s in by_size[: config.max_sessions]}
        scripts = [s for s in scripts if id(s) in keep]
    if not scripts:
        skipped.append(f"real sessions: none found in {directory}")
    return scripts


def run_one(
    strategy: str,
    script: Script,
    budget: int,
    overhead: int,
    pricing: Pricing,
    probes: bool = False,
    answerer: Answerer | None = None,
) -> tuple[BenchRow, Replay]:
    store = MemoryStore(ROOT)
    summarizer = BenchSummarizer()
    impl = build(strategy, Setup(budget, store, summarizer, overhead))
    asking = answerer.session(impl, store, budget) if answerer is not None and probes else None
    ask = asking.ask if asking is not None else None
    tracker = ProbeTracker(recall_of(impl), ask) if probes else None
    result = replay(
        impl,
        script,
        store=store,
        root=ROOT,
        overhead_tokens=overhead,
        window=budget,
        summarizer=summarizer,
        on_call=tracker.observe if tracker is not None else None,
    )
    row = BenchRow(
        strategy=strategy,
        workload=script.name,
        kind=script.kind,
        budget=budget,
        turns=result.turns,
        peak_tokens=result.peak_tokens,
        total_input_tokens=result.total_input_tokens,
        cache_read_share=result.cache_read_share,
        cost_usd=pricing.cost(result),
        rewrite_turns=result.rewrite_turns,
        summary_calls=result.summary_calls,
        in_view=result.in_view,
        recoverable=result.recoverable,
        lost=result.lost,
        needles=result.needles,
        p50_prepare_ms=result.p50_ms,
        p99_prepare_ms=result.p99_ms,
        violations=result.violations,
        over_budget_calls=result.over_budget_calls,
        overflow_turn=result.overflow_turn,
        weighted_input=result.weighted_input(),
        error=result.error,
        user_messages=result.user_messages,
        user_kept=result.user_kept,
        summary_retention=result.summary_retention,
        api_refusals=result.api_refusals,
        first_refusal=result.first_refusal,
        turn_starts=result.turn_starts,
        probes=tracker.counts().as_dict() if tracker is not None else None,
        recalls=impl.keeps_log,
        answers=asking.counts.as_dict() if asking is not None else None,
    )
    return row, result


def run_bench(config: BenchConfig | None = None, progress: Progress | None = None) -> BenchReport:
    """Replay every strategy on every workload, time the scaling, return the report."""
    config = config or BenchConfig()
    for name in config.strategies:
        if name not in STRATEGIES:
            raise ValueError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}")
    started = time.perf_counter()
    skipped: list[str] = []
    synthetic = [from_workload(synthetic_session(t, seed)) for t, seed in config.synthetic]
    real = real_scripts(config, skipped)
    jobs: list[tuple[Script, int, int]] = [
        (s, config.budget, config.overhead_tokens) for s in synthetic
    ]
    real_budget = config.real_budget or config.budget
    jobs += [(s, real_budget, text_tokens(s.system)) for s in real]
    if config.long_turn > 0:
        long_turn = long_turn_script(config.long_turn)
        jobs += [
            (at_budget(long_turn, b), b, config.overhead_tokens) for b in config.long_turn_budgets
        ]
    scaling_steps = (len(config.scaling_sizes) + 2) if config.scaling_sizes else 0
    total = len(jobs) * len(config.strategies) + scaling_steps
    done = 0

    def tick(label: str) -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, total, label)

    results: list[BenchRow] = []
    replays: dict[tuple[str, str], Replay] = {}
    series: dict[str, dict[str, list[int]]] = {}
    answerer = Answerer(config.answerer) if config.answerer and config.probes else None
    try:
        for script, budget, overhead in jobs:
            for strategy in config.strategies:
                row, result = run_one(
                    strategy, script, budget, overhead, config.pricing, config.probes, answerer
                )
                results.append(row)
                replays[(strategy, script.name)] = result
                series.setdefault(script.name, {})[strategy] = result.view_tokens
                tick(f"{strategy} on {script.name}")
    finally:
        if answerer is not None:
            answerer.close()
    scaling: list[ScalingPoint] = []
    if config.scaling_sizes:
        scaling = measure_scaling(
            config.scaling_sizes,
            budget=config.budget,
            samples=config.scaling_samples,
            repeats=config.scaling_repeats,
            on_step=lambda label: tick(f"scaling: {label}"),
        )
    report = BenchReport(
        config=config,
        results=results,
        scaling=scaling,
        machine=machine_info(),
        series=series,
        replays=replays,
        skipped=skipped,
        answerer=answerer.as_dict() if answerer is not None else None,
    )
    report.duration_s = time.perf_counter() - started
    report.machine["duration_s"] = round(report.duration_s, 2)
    return report
