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
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..sizing import text_tokens
from ..store.memory import MemoryStore
from ..testing.fakes import BenchSummarizer
from ..testing.workload import synthetic_session
from .answerer import Answerer, AnswererConfig
from .longturn import BUDGETS as LONG_TURN_BUDGETS
from .longturn import at_budget, long_turn_script
from .pricing import Pricing
from .probing import ProbeCounts, ProbeTracker, recall_of
from .replay import Replay, replay
from .scaling import ScalingPoint, measure_scaling
from .script import Script, from_session, from_workload
from .strategies import NAMES, Setup, build

DEFAULT_BUDGET = 12_500
ROOT = "/memory"
ENV_TRAJECTORIES = "CONTEXT_COMPACT_TRAJECTORIES"

Progress = Callable[[int, int, str], None]


def default_trajectories() -> Path:
    """``$CONTEXT_COMPACT_TRAJECTORIES``, else the repository's copy of the recorded sessions
    (``tests/data/trajectories``), else ``shared/data/trajectories`` beside the repository."""
    env = os.environ.get(ENV_TRAJECTORIES)
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[3]
    inside = repo / "tests/data/trajectories"
    return inside if inside.is_dir() else repo.parent / "shared/data/trajectories"


@dataclass(frozen=True)
class BenchConfig:
    strategies: tuple[str, ...] = NAMES
    budget: int = DEFAULT_BUDGET
    real_budget: int | None = None
    synthetic: tuple[tuple[int, int], ...] = ((300, 0), (300, 1), (300, 2), (1_000, 0))
    overhead_tokens: int = 0
    trajectories: Path | None = field(default_factory=default_trajectories)
    real: bool = True
    max_sessions: int | None = None
    scaling_sizes: tuple[int, ...] = (100, 1_000, 5_000, 20_000)
    scaling_samples: int = 20
    scaling_repeats: int = 3
    pricing: Pricing = field(default_factory=Pricing)
    long_turn: int = 0
    """Steps of the long-turn workload (0: not run)."""
    long_turn_budgets: tuple[int, ...] = LONG_TURN_BUDGETS
    probes: bool = False
    """Judge probes (``probing``) at every call where content leaves the view."""
    answerer: AnswererConfig | None = None
    """With ``probes``: also ask a model each probe (``answerer``)."""

    @classmethod
    def quick(cls, **overrides: Any) -> BenchConfig:
        """Fewer turns, three real sessions, small scaling sizes: well under a minute."""
        base = cls(
            synthetic=((120, 0),),
            max_sessions=3,
            scaling_sizes=(100, 1_000, 2_000),
            scaling_samples=10,
            scaling_repeats=2,
        )
        return replace(base, **overrides)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["trajectories"] = str(self.trajectories) if self.trajectories else None
        out["pricing"] = self.pricing.as_dict()
        return out


@dataclass
class BenchRow:
    strategy: str
    workload: str
    kind: str
    budget: int
    turns: int
    peak_tokens: int
    total_input_tokens: int
    cache_read_share: float
    cost_usd: float
    rewrite_turns: int
    summary_calls: int
    in_view: int
    recoverable: int
    lost: int
    needles: int
    p50_prepare_ms: float
    p99_prepare_ms: float
    violations: int
    over_budget_calls: int
    overflow_turn: int | None
    weighted_input: float
    error: str | None = None
    user_messages: int = 0
    user_kept: int = 0
    summary_retention: float | None = None
    api_refusals: int = 0
    first_refusal: str | None = None
    turn_starts: int = 0
    probes: dict[str, Any] | None = None
    """``ProbeCounts.as_dict()`` with ``BenchConfig.probes``."""
    recalls: bool = False
    """The engine keeps a log to ``recall`` from (else probes are answered in view only)."""
    answers: dict[str, Any] | None = None
    """``AnswerCounts.as_dict()`` with ``BenchConfig.answerer``."""

    @property
    def within_budget(self) -> bool:
        return self.over_budget_calls == 0 and self.error is None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class BenchReport:
    config: BenchConfig
    results: list[BenchRow]
    scaling: list[ScalingPoint]
    machine: dict[str, Any]
    series: dict[str, dict[str, list[int]]]
    replays: dict[tuple[str, str], Replay] = field(default_factory=dict, repr=False)
    skipped: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    answerer: dict[str, Any] | None = None
    """``Answerer.as_dict()``: the model that answered the probes, when one did."""

    def rows(self, workload: str | None = None, kind: str | None = None) -> list[BenchRow]:
        return [
            r
            for r in self.results
            if (workload is None or r.workload == workload) and (kind is None or r.kind == kind)
        ]

    def row(self, strategy: str, workload: str) -> BenchRow:
        return next(r for r in self.results if r.strategy == strategy and r.workload == workload)

    def workloads(self, kind: str | None = None) -> list[str]:
        return list(dict.fromkeys(r.workload for r in self.rows(kind=kind)))

    def aggregate(self, kind: str = "real") -> list[BenchRow]:
        """One row per strategy summing every workload of ``kind`` (times pooled)."""
        out = []
        names = self.workloads(kind)
        for strategy in self.config.strategies:
            rows = [r for r in self.rows(kind=kind) if r.strategy == strategy]
            if not rows:
                continue
            replays = [self.replays[(strategy, w)] for w in names if (strategy, w) in self.replays]
            times = [t for rp in replays for t in rp.prepare_ms]
            read = sum(rp.cache_read for rp in replays)
            total = sum(rp.total_input_tokens for rp in replays)
            pooled = Replay(strategy, f"{kind} (all {len(rows)})", prepare_ms=times)
            out.append(
                BenchRow(
                    strategy=strategy,
                    workload=pooled.workload,
                    kind=kind,
                    budget=rows[0].budget,
                    turns=sum(r.turns for r in rows),
                    peak_tokens=max(r.peak_tokens for r in rows),
                    total_input_tokens=sum(r.total_input_tokens for r in rows),
                    cache_read_share=read / total if total else 0.0,
                    cost_usd=sum(r.cost_usd for r in rows),
                    rewrite_turns=sum(r.rewrite_turns for r in rows),
                    summary_calls=sum(r.summary_calls for r in rows),
                    in_view=sum(r.in_view for r in rows),
                    recoverable=sum(r.recoverable for r in rows),
                    lost=sum(r.lost for r in rows),
                    needles=sum(r.needles for r in rows),
                    p50_prepare_ms=pooled.p50_ms,
                    p99_prepare_ms=pooled.p99_ms,
                    violations=sum(r.violations for r in rows),
                    over_budget_calls=sum(r.over_budget_calls for r in rows),
                    overflow_turn=None,
                    weighted_input=sum(r.weighted_input for r in rows),
                    error="; ".join(r.error for r in rows if r.error) or None,
                    user_messages=sum(r.user_messages for r in rows),
                    user_kept=sum(r.user_kept for r in rows),
                    summary_retention=mean_retention(rows),
                    api_refusals=sum(r.api_refusals for r in rows),
                    probes=pooled_probes(rows),
                    recalls=all(r.recalls for r in rows),
                )
            )
        return out

    def findings(self) -> list[str]:
        """Per workload: the cheapest lossless within-budget strategy; every peer win."""
        notes: list[str] = []
        for workload in self.workloads():
            rows = self.rows(workload)
            default = next((r for r in rows if r.strategy == "default"), None)
            clean = [
                r
                for r in rows
                if r.lost == 0 and r.within_budget and not r.violations and not r.api_refusals
            ]
            best = min(clean, key=lambda r: r.cost_usd, default=None)
            if default is not None and (
                default.lost
                or not default.within_budget
                or default.violations
                or default.api_refusals
            ):
                notes.append(
                    f"{workload}: default lost {default.lost}, over budget on "
                    f"{default.over_budget_calls} calls, {default.violations} invalid views, "
                    f"{default.api_refusals} API refusals"
                    + (f", error: {default.error}" if default.error else "")
                )
            if best is None:
                notes.append(f"{workload}: no strategy kept everything within the budget")
            if default is None:
                continue
            clean_wins, other_wins = [], []
            for r in sorted(rows, key=lambda r: r.cost_usd):
                if r.strategy == "default" or r.cost_usd >= default.cost_usd - 1e-9:
                    continue
                if any(r is c for c in clean):
                    clean_wins.append(f"{r.strategy} ${r.cost_usd:.4f}")
                    continue
                why = []
                if r.lost:
                    why.append(f"loses {r.lost}")
                if not r.within_budget:
                    why.append(f"over budget on {r.over_budget_calls} of {r.turns + 1} calls")
                if r.violations:
                    why.append(f"{r.violations} invalid views")
                if r.api_refusals:
                    why.append(f"{r.api_refusals} API refusals")
                other_wins.append(f"{r.strategy} ${r.cost_usd:.4f} ({', '.join(why)})")
            if clean_wins:
                notes.append(
                    f"{workload}: PEER WINS at equal retention (nothing lost, within budget): "
                    f"{'; '.join(clean_wins)} vs default ${default.cost_usd:.4f}"
                )
            if other_wins:
                notes.append(
                    f"{workload}: cheaper than default (${default.cost_usd:.4f}) only by losing "
                    f"results or overflowing: {'; '.join(other_wins)}"
                )
        return notes

    def to_dict(self) -> dict[str, Any]:
        keys = (
            "strategy",
            "workload",
            "turns",
            "peak_tokens",
            "total_input_tokens",
            "cache_read_share",
            "cost_usd",
            "rewrite_turns",
            "summary_calls",
            "lost",
            "p50_prepare_ms",
            "p99_prepare_ms",
            "violations",
        )
        results = []
        for row in self.results:
            full = row.as_dict()
            results.append({**{k: full[k] for k in keys}, **full})
        return {
            "results": results,
            "aggregates": {"real": [r.as_dict() for r in self.aggregate("real")]},
            "scaling": [p.as_dict() for p in self.scaling],
            "machine": self.machine,
            "config": self.config.as_dict(),
            "findings": self.findings(),
            "skipped": self.skipped,
            "duration_s": self.duration_s,
            "series": self.series,
            "answerer": self.answerer,
        }


def mean_retention(rows: list[BenchRow]) -> float | None:
    """Summary retention over rows, weighted by their summary calls (None without any)."""
    scored = [
        (r.summary_retention, r.summary_calls) for r in rows if r.summary_retention is not None
    ]
    calls = sum(n for _, n in scored)
    return sum(v * n for v, n in scored) / calls if calls else None


def pooled_probes(rows: list[BenchRow]) -> dict[str, Any] | None:
    """The probe counts of ``rows`` summed (None when no row judged probes)."""
    judged = [r.probes for r in rows if r.probes is not None]
    if not judged:
        return None
    total = ProbeCounts()
    for counts in judged:
        total.add(ProbeCounts.from_dict(counts))
    return total.as_dict()


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
        from ..loaders import load_all
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
        if name not in NAMES:
            raise ValueError(f"unknown strategy {name!r}; known: {', '.join(NAMES)}")
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
