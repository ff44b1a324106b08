"""The bench report as terminal tables (rich) and as markdown.

``render(report, console)`` prints: synthetic workloads (one section each), the real
sessions summed per strategy, a per-session matrix of cost and losses, the scaling table
and the findings. ``render_scaling(data, console)`` prints the scaling suite
(``bench --scaling``): per-turn loop rows per window and the cold starts, 80 columns wide.
``markdown_table`` formats rows for READMEs and the issue simulation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .longturn import KIND as LONG_TURN
from .run import BenchReport, BenchRow, mean_retention
from .scaling_report import _int, _narrow
from .scaling_report import render_scaling as render_scaling


def _reach(row: BenchRow) -> str:
    lost = f"[red]{row.lost:,}[/red]" if row.lost else "0"
    return f"{row.in_view:,} / {row.recoverable:,} / {lost}"


def _over(row: BenchRow) -> str:
    if row.error:
        return f"[red]error at {escape(row.error.split(':', 1)[0])}[/red]"
    if not row.over_budget_calls:
        return "0"
    first = f" (from {row.overflow_turn})" if row.overflow_turn is not None else ""
    return f"[yellow]{row.over_budget_calls:,}{first}[/yellow]"


# Short names keep every table inside 80 columns (a terminal, or a pipe, where Rich assumes
# 80); ``LEGEND`` spells them out under the tables.
SHORT = {"openhands-summarizer": "oh-summ", "anthropic-clearing": "a-clear"}
LEGEND = (
    "oh-summ: openhands-summarizer; a-clear: anthropic-clearing; input: input tokens "
    "(M = millions); cache: share read from the prompt cache; rewrites: calls that rewrote "
    "earlier history; kept/recov/lost: results (or planted facts) in view / reachable through "
    "a reference / lost; over: calls over the budget (first at call N); invalid: views "
    "check() refused; refused: requests the Messages API would refuse (tool pairs, and with "
    "thinking on a final turn that opens with thinking, thinking unmodified)"
)


def short(strategy: str) -> str:
    return SHORT.get(strategy, strategy)


def _millions(n: int) -> str:
    return f"{n / 1e6:,.1f}M" if n >= 1_000_000 else f"{n:,}"


def results_table(title: str, groups: Iterable[tuple[str, Sequence[BenchRow]]]) -> Table:
    """Cost per strategy: peak and input tokens, cache, dollars, rewrites, summaries."""
    table = _narrow(f"{title}: cost")
    for name in ("strategy", "turns", "peak", "input", "cache", "cost $", "rewrites", "summ."):
        table.add_column(name, justify="left" if name == "strategy" else "right")
    for _, rows in _grouped(table, groups, 8):
        cheapest = _cheapest(rows)
        for r in rows:
            cost = f"{r.cost_usd:.4f}"
            if cheapest is not None and r.cost_usd == cheapest and r.lost == 0 and r.within_budget:
                cost = f"[green]{cost}[/green]"
            table.add_row(
                _name(r.strategy),
                _int(r.turns),
                _int(r.peak_tokens),
                _millions(r.total_input_tokens),
                f"{r.cache_read_share:.0%}",
                cost,
                _int(r.rewrite_turns),
                _int(r.summary_calls),
            )
    return table


def safety_table(title: str, groups: Iterable[tuple[str, Sequence[BenchRow]]]) -> Table:
    """What each strategy kept, where it overflowed, and how long ``prepare`` took."""
    table = _narrow(f"{title}: what was kept, and speed")
    for name in ("strategy", "kept/recov/lost", "over", "invalid", "refused", "p50 ms", "p99 ms"):
        table.add_column(name, justify="left" if name == "strategy" else "right")
    for _, rows in _grouped(table, groups, 7):
        for r in rows:
            table.add_row(
                _name(r.strategy),
                _reach(r),
                _over(r),
                f"[red]{r.violations}[/red]" if r.violations else "0",
                f"[red]{r.api_refusals:,}[/red]" if r.api_refusals else "0",
                f"{r.p50_prepare_ms:.3f}",
                f"{r.p99_prepare_ms:.2f}",
            )
    return table


def task_table(report: BenchReport) -> Table:
    """Per strategy: the user's messages still in view verbatim at the end, and how much of
    what its summaries were given they kept (``summary_score``), over every workload."""
    table = _narrow("What the model still has of the task (all workloads)")
    table.add_column("strategy", no_wrap=True)
    table.add_column("user words kept", justify="right")
    table.add_column("summaries", justify="right")
    table.add_column("summary retention", justify="right")
    for strategy in report.config.strategies:
        rows = [r for r in report.results if r.strategy == strategy]
        if not rows:
            continue
        typed, kept = sum(r.user_messages for r in rows), sum(r.user_kept for r in rows)
        retention = mean_retention(rows)
        table.add_row(
            short(strategy),
            f"{kept:,} / {typed:,}" + (f" ({kept / typed:.0%})" if typed else ""),
            _int(sum(r.summary_calls for r in rows)),
            "" if retention is None else f"{retention:.0%}",
        )
    return table


def _name(strategy: str) -> str:
    return f"[bold]{strategy}[/bold]" if strategy == "default" else short(strategy)


def _cheapest(rows: Sequence[BenchRow]) -> float | None:
    return min((r.cost_usd for r in rows if r.lost == 0 and r.within_budget), default=None)


def _grouped(
    table: Table, groups: Iterable[tuple[str, Sequence[BenchRow]]], columns: int
) -> Iterable[tuple[str, Sequence[BenchRow]]]:
    """Each group under a label row of its own (the label may run past its column)."""
    for index, (label, rows) in enumerate(groups):
        if index:
            table.add_section()
        table.add_row(f"[bold cyan]{escape(_short(label, 30))}[/bold cyan]", *[""] * (columns - 1))
        yield label, rows


def real_matrix(report: BenchReport) -> list[Table]:
    """Per real session, numbered (names below): cost of every strategy (cheapest lossless in
    green, * over budget on some call), then results lost."""
    names = report.workloads("real")
    cost = _narrow("Real sessions one by one: cost $ (* = over budget on some call)")
    lost = _narrow("Real sessions one by one: results lost")
    for table in (cost, lost):
        table.add_column("#", justify="right")
        for strategy in report.config.strategies:
            table.add_column(short(strategy), justify="right")
    for number, workload in enumerate(names, 1):
        rows = {r.strategy: r for r in report.rows(workload)}
        cheapest = _cheapest(list(rows.values()))
        costs, losses = [], []
        for strategy in report.config.strategies:
            r = rows.get(strategy)
            if r is None:
                costs.append("")
                losses.append("")
                continue
            text = f"{r.cost_usd:.3f}" + ("*" if not r.within_budget else "")
            if r.lost:
                text = f"[red]{text}[/red]"
            elif cheapest is not None and r.cost_usd == cheapest and r.within_budget:
                text = f"[green]{text}[/green]"
            costs.append(text)
            losses.append(f"[red]{r.lost:,}[/red]" if r.lost else "0")
        cost.add_row(str(number), *costs)
        lost.add_row(str(number), *losses)
    return [cost, lost]


def real_names(report: BenchReport) -> list[str]:
    """The legend of ``real_matrix``: each number's session and its turns."""
    out = []
    for number, workload in enumerate(report.workloads("real"), 1):
        turns = report.rows(workload)[0].turns
        out.append(f"#{number} {_short(workload, 60)} ({turns:,} turns)")
    return out


def _short(name: str, width: int = 44) -> str:
    if len(name) <= width:
        return name
    tail = width // 2
    return name[: width - tail - 1] + "…" + name[len(name) - tail :]


def scaling_table(report: BenchReport) -> Table:
    table = _narrow("prepare() time vs history length (median ms)")
    names = list(dict.fromkeys(p.strategy for p in report.scaling))
    table.add_column("messages", justify="right")
    for name in names:
        table.add_column(name, justify="right")
    for n in sorted({p.messages for p in report.scaling}):
        at = {p.strategy: p for p in report.scaling if p.messages == n}
        cells = [f"{at[name].p50_ms:.3f}" if name in at else "" for name in names]
        table.add_row(_int(n), *cells)
    return table


def render(report: BenchReport, console: Console | None = None) -> None:
    console = console or Console()
    synthetic = report.workloads("synthetic")
    if synthetic:
        groups = [(w, report.rows(w)) for w in synthetic]
        budget = report.config.budget
        title = f"Synthetic sessions, budget {budget:,} tokens"
        console.print(results_table(title, groups))
        console.print(safety_table(title, groups))
    long = report.workloads(LONG_TURN)
    if long:
        groups = [
            (
                f"{report.rows(w)[0].turns:,} steps, budget {report.rows(w)[0].budget:,}",
                report.rows(w),
            )
            for w in long
        ]
        title = "One request, then only tool calls, thinking on"
        console.print(results_table(title, groups))
        console.print(safety_table(title, groups))
        for w in long:
            for r in report.rows(w):
                refused = f"; first refusal: {r.first_refusal}" if r.first_refusal else ""
                note = (
                    f"{short(r.strategy)} at {r.budget:,}: turns opened: {r.turn_starts:,}{refused}"
                )
                console.print(f"[dim]{escape(note)}[/dim]")
    real = report.workloads("real")
    if real:
        aggregate = report.aggregate("real")
        budget = report.config.real_budget or report.config.budget
        title = f"Real recorded sessions ({len(real)}) summed, budget {budget:,}"
        summed = [(aggregate[0].workload if aggregate else "real", aggregate)]
        console.print(results_table(title, summed))
        console.print(safety_table(title, summed))
        for table in real_matrix(report):
            console.print(table)
        for line in real_names(report):
            console.print(f"[dim]{escape(line)}[/dim]")
    if report.results:
        console.print(task_table(report))
    if report.scaling:
        console.print(scaling_table(report))
    for note in report.skipped:
        console.print(f"[yellow]skipped:[/yellow] {escape(note)}")
    console.print(f"[dim]{escape(LEGEND)}[/dim]")
    findings = report.findings()
    console.print("[bold]Findings[/bold]" if findings else "[bold]Findings:[/bold] none")
    for note in findings:
        console.print(f"  - {escape(note)}")
    console.print(
        f"[dim]cost: {escape(report.config.pricing.source)}; "
        f"ran in {report.duration_s:.1f} s on {report.machine.get('cpus')} CPUs[/dim]"
    )


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---" for _ in headers) + "|",
    ]
    for row in rows:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines)
