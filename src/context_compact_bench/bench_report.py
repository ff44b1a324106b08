"""What a bench run reports: one row per strategy and workload, and the report of a whole run.

A row holds what ``replay`` measured and ``Pricing`` priced for one strategy on one workload;
the report holds every row with the run's config and machine, its findings and its JSON form.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from context_compact.testing.replay import Replay

from .probing import ProbeCounts
from .scaling import ScalingPoint

if TYPE_CHECKING:
    from .bench_config import BenchConfig


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
