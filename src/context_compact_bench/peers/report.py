"""``bench --real-peers`` output: the table over all sessions, the versions, the model checks."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from .run import LABELS, MODELS

HEADER = (
    "peak",
    "over budget",
    "weighted input",
    "rewrites",
    "summary calls",
    "summary input",
    "results lost",
    "time vs ours",
)


def _m(n: float) -> str:
    return f"{n / 1e6:.2f}M"


def cells(total: dict[str, Any]) -> list[str]:
    over = f"{total['over_budget_calls']:,}"
    if total.get("refusals"):
        over += f" (after {total['refusals']:,} refusals)"
    ratio = total.get("time_vs_ours")
    return [
        f"{total['peak_tokens']:,}",
        over,
        _m(total["weighted_input"]),
        f"{total['rewrite_turns']:,}",
        f"{total['summary_calls']:,}",
        f"{total['summary_input_tokens'] / 1e3:,.0f}K",
        f"{total['lost']:,}",
        "1.0" if total["strategy"] == "default" else (f"{ratio:.2f}x" if ratio else "-"),
    ]


def label(name: str) -> str:
    model_of = {m: r for r, m in MODELS.items()}
    if name in model_of:
        return f"model `{name}` (of {LABELS[model_of[name]].split(' (')[0]})"
    return LABELS.get(name, name)


def markdown(data: dict[str, Any]) -> str:
    lines = [
        f"| {data['sessions']} real sessions at {data['budget']:,} | " + " | ".join(HEADER) + " |",
        "|---" * (len(HEADER) + 1) + "|",
    ]
    for total in data["totals"]:
        lines.append(f"| {label(total['strategy'])} | " + " | ".join(cells(total)) + " |")
    return "\n".join(lines)


def render(data: dict[str, Any], console: Any) -> None:
    from rich.markup import escape

    for line in data["skipped"]:
        console.print(f"[yellow]{escape(line)}[/yellow]")
    console.print(escape(markdown(data)))
    for name, version in data["versions"].items():
        console.print(f"{name}: {version}")
    for check in data["checks"]:
        fields = ", ".join(
            f"{k} {v['model']:,.0f} vs {v['real']:,.0f}" + ("" if v["within"] else " (OUT)")
            for k, v in check["fields"].items()
        )
        verdict = "within" if check["within_tolerance"] else "NOT within"
        console.print(
            f"model {check['model']} vs real {check['real']}: {verdict} {check['tolerance']}: "
            f"{fields}"
        )
    for total in data["totals"]:
        for error in total["errors"][:3]:
            console.print(f"[red]{total['strategy']}: {escape(error)}[/red]")
    console.print(f"{data['duration_s']:.0f} s")


def command(
    quick: bool,
    sessions: int | None,
    budget: int | None,
    trajectories: Path | None,
    python: str | None,
) -> dict[str, Any]:
    """``bench --real-peers``: run, print, and return the report (the command writes --json)."""
    from rich.console import Console

    from ..run import BenchConfig
    from .run import run_real_peers

    config = BenchConfig.quick() if quick else BenchConfig()
    changes: dict[str, Any] = {"max_sessions": sessions or config.max_sessions}
    if budget is not None:
        changes["budget"] = budget
    if trajectories is not None:
        changes["trajectories"] = trajectories
    data = run_real_peers(replace(config, **changes), python)
    render(data, Console(width=max(Console().width, 160)))
    return data
