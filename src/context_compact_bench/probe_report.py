"""The probe tables of a bench report (``bench --probes``): per strategy and kind of probe,
answered in view / by one recall / lost, summed over each kind of workload, beside the
strategy's weighted input (what it cost) and its calls over the budget."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .longturn import KIND as LONG_TURN
from .probing import HEADERS, LEGEND, ProbeCounts, probe_rows
from .report import markdown_table, short
from .run import BenchReport, BenchRow

KIND_TITLES = {
    "synthetic": "Synthetic sessions",
    "real": "Real recorded sessions",
    LONG_TURN: "One request, then only tool calls",
}


def _counts(row: BenchRow) -> ProbeCounts | None:
    return ProbeCounts.from_dict(row.probes) if row.probes is not None else None


def groups(report: BenchReport) -> list[tuple[str, list[BenchRow]]]:
    """Per kind of workload that judged probes: a title and one summed row per strategy."""
    out = []
    for kind in dict.fromkeys(r.kind for r in report.results if r.probes is not None):
        rows = report.aggregate(kind)
        n = len(report.workloads(kind))
        title = f"{KIND_TITLES.get(kind, kind.title() + ' sessions')} ({n})"
        out.append((title, rows))
    return out


def _rows(rows: Sequence[BenchRow]) -> list[list[str]]:
    judged = [r for r in rows if r.probes is not None]
    lines = probe_rows([(r.strategy, _counts(r), r.recalls) for r in judged])
    return [
        [short(line[0]), *line[1:], f"{r.weighted_input / 1e6:.2f}M", f"{r.over_budget_calls:,}"]
        for line, r in zip(lines, judged, strict=True)
    ]


def render_probes(report: BenchReport, console: Console) -> None:
    for title, rows in groups(report):
        # Within 80 columns: cells as v/r/l, no "all" cell, calls over the budget left to
        # the cost tables (the markdown has them all).
        table = Table(
            title=f"Probes: {title}, view/recall/lost",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            padding=(0, 0, 0, 1),
            pad_edge=False,
        )
        headers = ["strategy", "log", *HEADERS[2:-1], "input"]
        for header in headers:
            table.add_column(header, justify="left" if header in headers[:2] else "right")
        for line in _rows(rows):
            table.add_row(*(c.replace(" / ", "/") for c in [*line[:-3], line[-2]]))
        console.print(table)
        for row in rows:
            counts = _counts(row)
            if counts is None:
                continue
            recalled = counts.total("recall")
            if recalled:
                note = (
                    f"{row.strategy}: {counts.first_page:,} of {recalled:,} recall answers on "
                    "the query's first page"
                )
                console.print(f"[dim]{escape(note)}[/dim]")
            # Only ours is expected to lose nothing: its losses are spelled out.
            for example in counts.lost_examples[:3] if row.strategy == "default" else []:
                console.print(f"[dim]{escape(row.strategy)} lost: {escape(example)}[/dim]")
    note = "log: yes when the engine keeps a log recall searches; input: weighted input tokens."
    console.print(f"[dim]{escape(LEGEND)} {note}[/dim]")


def probe_markdown(report: BenchReport) -> str:
    """The probe tables as markdown (the README's Measured section)."""
    parts = []
    for title, rows in groups(report):
        parts.append(f"**{title}**\n")
        parts.append(markdown_table([*HEADERS, "weighted input", "over budget"], _rows(rows)))
        parts.append("")
    return "\n".join(parts)


def markdown_from_json(data: dict[str, Any]) -> str:
    """The same tables from a ``bench --probes --json`` report (rows summed per kind and
    strategy, in the order they ran)."""
    sums: dict[str, dict[str, dict[str, Any]]] = {}
    workloads: dict[str, set[str]] = {}
    for row in data["results"]:
        if row.get("probes") is None:
            continue
        workloads.setdefault(row["kind"], set()).add(row["workload"])
        mine = sums.setdefault(row["kind"], {}).setdefault(
            row["strategy"],
            {"counts": ProbeCounts(), "input": 0.0, "over": 0, "recalls": True},
        )
        mine["counts"].add(ProbeCounts.from_dict(row["probes"]))
        mine["input"] += row["weighted_input"]
        mine["over"] += row["over_budget_calls"]
        mine["recalls"] = mine["recalls"] and row["recalls"]
    parts = []
    for kind, strategies in sums.items():
        title = f"{KIND_TITLES.get(kind, kind.title() + ' sessions')} ({len(workloads[kind])})"
        lines = probe_rows([(n, v["counts"], v["recalls"]) for n, v in strategies.items()])
        rows = [
            [short(line[0]), *line[1:], f"{v['input'] / 1e6:.2f}M", f"{v['over']:,}"]
            for line, v in zip(lines, strategies.values(), strict=True)
        ]
        parts += [
            f"**{title}**\n",
            markdown_table([*HEADERS, "weighted input", "over budget"], rows),
        ]
        parts.append("")
    return "\n".join(parts)


__all__ = ["groups", "markdown_from_json", "probe_markdown", "render_probes"]
