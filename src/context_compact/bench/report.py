"""The bench report as terminal tables (rich) and as markdown.

``render(report, console)`` prints: synthetic workloads (one section each), the real
sessions summed per strategy, a per-session matrix of cost and losses, the scaling table
and the findings. ``markdown_table`` formats rows for READMEs and the issue simulation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .run import BenchReport, BenchRow


def _int(n: int) -> str:
    return f"{n:,}"


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


COLUMNS = (
    ("strategy", "left"),
    ("turns", "right"),
    ("peak tok", "right"),
    ("input tok", "right"),
    ("cache read", "right"),
    ("cost $", "right"),
    ("rewrites", "right"),
    ("summaries", "right"),
    ("in view / recov / lost", "right"),
    ("over budget", "right"),
    ("invalid", "right"),
    ("p50 ms", "right"),
    ("p99 ms", "right"),
)


def results_table(title: str, groups: Iterable[tuple[str, Sequence[BenchRow]]]) -> Table:
    table = Table(title=title, title_justify="left", header_style="bold")
    for name, justify in COLUMNS:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    first = True
    for label, rows in groups:
        if not first:
            table.add_section()
        first = False
        table.add_row(f"[bold cyan]{escape(label)}[/bold cyan]", *[""] * (len(COLUMNS) - 1))
        cheapest = min((r.cost_usd for r in rows if r.lost == 0 and r.within_budget), default=None)
        for r in rows:
            cost = f"{r.cost_usd:.4f}"
            if cheapest is not None and r.cost_usd == cheapest and r.lost == 0 and r.within_budget:
                cost = f"[green]{cost}[/green]"
            table.add_row(
                f"[bold]{r.strategy}[/bold]" if r.strategy == "default" else r.strategy,
                _int(r.turns),
                _int(r.peak_tokens),
                _int(r.total_input_tokens),
                f"{r.cache_read_share:.0%}",
                cost,
                _int(r.rewrite_turns),
                _int(r.summary_calls),
                _reach(r),
                _over(r),
                f"[red]{r.violations}[/red]" if r.violations else "0",
                f"{r.p50_prepare_ms:.3f}",
                f"{r.p99_prepare_ms:.2f}",
            )
    return table


def real_matrix(report: BenchReport) -> Table:
    """Per real session: cost and losses of every strategy (cheapest lossless in green)."""
    table = Table(
        title="Real sessions, one by one: cost $ / lost results (* = over budget on some call)",
        title_justify="left",
        header_style="bold",
    )
    table.add_column("session")
    table.add_column("turns", justify="right")
    for strategy in report.config.strategies:
        table.add_column(strategy, justify="right")
    for workload in report.workloads("real"):
        rows = {r.strategy: r for r in report.rows(workload)}
        cheapest = min(
            (r.cost_usd for r in rows.values() if r.lost == 0 and r.within_budget), default=None
        )
        cells = []
        for strategy in report.config.strategies:
            r = rows.get(strategy)
            if r is None:
                cells.append("")
                continue
            text = f"{r.cost_usd:.3f}/{r.lost}" + ("*" if not r.within_budget else "")
            if r.lost:
                text = f"[red]{text}[/red]"
            elif cheapest is not None and r.cost_usd == cheapest and r.within_budget:
                text = f"[green]{text}[/green]"
            cells.append(text)
        turns = next(iter(rows.values())).turns
        table.add_row(escape(_short(workload)), _int(turns), *cells)
    return table


def _short(name: str, width: int = 44) -> str:
    if len(name) <= width:
        return name
    tail = width // 2
    return name[: width - tail - 1] + "…" + name[len(name) - tail :]


def scaling_table(report: BenchReport) -> Table:
    table = Table(
        title="prepare() time vs history length (median ms)",
        title_justify="left",
        header_style="bold",
    )
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
        console.print(results_table(f"Synthetic sessions, budget {budget:,} tokens", groups))
    real = report.workloads("real")
    if real:
        aggregate = report.aggregate("real")
        budget = report.config.real_budget or report.config.budget
        console.print(
            results_table(
                f"Real recorded sessions ({len(real)}), summed per strategy, "
                f"budget {budget:,} tokens",
                [(aggregate[0].workload if aggregate else "real", aggregate)],
            )
        )
        console.print(real_matrix(report))
    if report.scaling:
        console.print(scaling_table(report))
    for note in report.skipped:
        console.print(f"[yellow]skipped:[/yellow] {escape(note)}")
    findings = report.findings()
    console.print("[bold]Findings[/bold]" if findings else "[bold]Findings:[/bold] none")
    for note in findings:
        console.print(f"  - {escape(note)}")
    console.print(
        f"[dim]in view / recov / lost: planted facts (synthetic) or full tool results (real); "
        f"cost: {escape(report.config.pricing.source)}; "
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


def markdown_results(rows: Sequence[BenchRow]) -> str:
    return markdown_table(
        (
            "strategy",
            "workload",
            "peak tok",
            "cache read",
            "cost $",
            "rewrites",
            "summaries",
            "in view / recov / lost",
            "over budget",
            "invalid",
            "p50 ms",
        ),
        (
            (
                r.strategy,
                r.workload,
                f"{r.peak_tokens:,}",
                f"{r.cache_read_share:.0%}",
                f"{r.cost_usd:.4f}",
                r.rewrite_turns,
                r.summary_calls,
                f"{r.in_view} / {r.recoverable} / {r.lost}",
                r.over_budget_calls,
                r.violations,
                f"{r.p50_prepare_ms:.3f}",
            )
            for r in rows
        ),
    )
