"""The scaling suite's tables (``bench --scaling``): the loop's latency and memory per window,
the cold start per history length, and each measure against its goal.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table


def _int(n: int) -> str:
    return f"{n:,}"


# -- the scaling suite (``bench --scaling``) ---------------------------------------------------


def _times(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}x"


def _written(point: dict[str, Any]) -> str:
    results, written = point.get("result_bytes") or 0, point.get("written_bytes")
    return f"{written / results:.1f}x" if results and written is not None else ""


def _mb(value: float | None) -> str:
    return "" if value is None else f"{value:,.0f}"


def _narrow(title: str) -> Table:
    """A table that fits 80 columns: light rules, no edge, padding on one side only."""
    return Table(
        title=title,
        title_justify="left",
        header_style="bold",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 1, 0, 0),
    )


def scaling_loop_table(data: dict[str, Any], window: int) -> Table:
    """Per-turn cost, memory and files of every loop run at one window (fits 80 columns)."""
    table = _narrow(f"prepare() per turn in the SDK loop (ms), window {window:,} tokens")
    table.add_column("run", no_wrap=True)
    for name in ("turns", "p50", "p99", "max", "/dumps", "RSS MB", "files"):
        table.add_column(name, justify="right")
    table.add_column("written", justify="right")
    for run in data.get("loops", []):
        if run["window"] != window:
            continue
        label = f"{run['engine']} {run['store']}"
        if "error" in run:
            table.add_row(label, f"[red]{escape(run['error'][:60])}[/red]")
            continue
        for i, p in enumerate(run["points"]):
            table.add_row(
                label if i == 0 else "",
                _int(p["turns"]),
                f"{p['p50_ms']:.3f}",
                f"{p['p99_ms']:.2f}",
                f"{p['max_ms']:,.1f}",
                _times(p.get("vs_dumps")),
                _mb(p.get("rss_mb")),
                _int(p["files"]),
                _written(p),
            )
    return table


def scaling_cold_table(data: dict[str, Any]) -> Table:
    rows = data.get("cold", [])
    size = f"{rows[0]['messages']:,}-message" if rows else "long"
    table = _narrow(f"Cold start: one prepare() of a {size} history")
    for name in ("run", "window", "seconds", "next turn ms", "RSS MB", "files", "runs"):
        table.add_column(name, justify="left" if name == "run" else "right")
    for r in rows:
        label = f"{r['engine']} {r['store']}"
        if "error" in r:
            table.add_row(label, _int(r["window"]), f"[red]{escape(r['error'][:50])}[/red]")
            continue
        table.add_row(
            label,
            _int(r["window"]),
            f"{r['seconds']:.3f}",
            f"{r['next_ms']:.2f}" if r.get("next_ms") is not None else "",
            _mb(r.get("rss_mb")),
            _int(r["files"]),
            str(r["repeats"]),
        )
    return table


_GOAL_NAMES = {"p99 ms": "p99 ms", "cold start s": "cold s", "RSS growth MB": "RSS +MB"}


def goal_label(row: dict[str, Any]) -> str:
    span = str(row["span"]).replace("turns ", "").replace(" messages", " msgs")
    return f"{_GOAL_NAMES.get(row['measure'], row['measure'])} {span}"


_GOAL_DIGITS = {"p99 ms": 2, "cold start s": 3, "RSS growth MB": 1}


def _figure(value: float | None, measure: str) -> str:
    return "" if value is None else f"{value:,.{_GOAL_DIGITS.get(measure, 2)}f}"


def scaling_goals_table(data: dict[str, Any]) -> Table:
    """Issue 19's goals (``goals.py``): the default against the seed in the same run."""
    table = _narrow("Goals: the default against the seed, same turns, same run")
    table.add_column("measure", no_wrap=True)
    for name in ("window", "store", "default", "seed", "ratio", "goal"):
        table.add_column(name, justify="left" if name in ("store", "goal") else "right")
    rows = data.get("goals", [])
    for row in rows:
        table.add_row(
            goal_label(row),
            _int(row["window"]),
            row["store"],
            _figure(row["default"], row["measure"]),
            _figure(row["seed"], row["measure"]),
            "" if row["ratio"] is None else f"{row['ratio']:.2f}x",
            "[green]met[/green]" if row["met"] else "[red]not met[/red]",
        )
    goals = dict.fromkeys(
        f"{_GOAL_NAMES.get(r['measure'], r['measure'])} {r['goal']}" for r in rows
    )
    table.caption = f"goals: {'; '.join(goals)}"
    table.caption_justify = "left"
    return table


def render_scaling(data: dict[str, Any], console: Console | None = None) -> None:
    """The scaling suite's tables and notes, 80 columns wide."""
    console = console or Console()
    windows = list(dict.fromkeys(run["window"] for run in data.get("loops", [])))
    for window in windows:
        console.print(scaling_loop_table(data, window))
        console.print()
    if data.get("cold"):
        console.print(scaling_cold_table(data))
        console.print()
    if data.get("goals"):
        console.print(scaling_goals_table(data))
        console.print()
    for note in data.get("skipped", []):
        console.print(f"[yellow]skipped:[/yellow] {escape(note)}")
    runs = [*data.get("loops", []), *data.get("cold", [])]
    tokens = sorted({r["tokens"] for r in runs if r["engine"] == "default" and r.get("tokens")})
    pauses = [
        (p.get("gc_max_ms", 0.0), run["label"], p["turns"])
        for run in data.get("loops", [])
        for p in run.get("points", [])
    ]
    longest = max(pauses, default=None)
    machine = data.get("machine", {})
    notes = [
        "p50/p99/max: the turns since the previous row; /dumps: median of prepare's time "
        "over json.dumps(view)'s on the same turns; RSS: resident memory at the row; files: "
        "under the store's root; written: bytes written per byte of tool results; cold: a "
        "fresh Compactor and store (median of runs), then the next turn",
        f"default counts tokens with: {', '.join(tokens) or 'n/a'}; seed: chars (4 a token)",
    ]
    if longest is not None:
        notes.append(
            f"longest GC pause inside prepare: {longest[0]:,.1f} ms "
            f"({longest[1]}, by turn {longest[2]:,})"
        )
    notes.append(
        f"ran in {data.get('duration_s', 0):,.0f} s on {machine.get('cpus')} CPUs, "
        f"Python {machine.get('python')}"
    )
    for note in notes:
        console.print(f"[dim]{escape(note)}[/dim]")
