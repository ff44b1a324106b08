"""``context-compact bench``: the click command (the CLI registers it with ``add_command``)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from .pricing import Pricing
from .strategies import NAMES


def _ints(value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        return tuple(int(v.replace("_", "")) for v in value.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {value!r}") from None


@click.command("bench")
@click.option("--quick", is_flag=True, help="Fewer turns, 3 real sessions, small scaling sizes.")
@click.option(
    "--long",
    "long_run",
    is_flag=True,
    help="Only the long-session measurements: per-turn time, memory and files at 1k, 10k and "
    "50k turns, and cold starts (with --quick: 200 and 1,000 turns).",
)
@click.option(
    "--budget",
    type=click.IntRange(min=1_000),
    default=None,
    help="Context budget in tokens for every strategy (default 12,500).",
)
@click.option(
    "--real-budget",
    type=click.IntRange(min=1_000),
    default=None,
    help="Budget for the real sessions (default: --budget).",
)
@click.option(
    "--trajectories",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory of recorded sessions (default: $CONTEXT_COMPACT_TRAJECTORIES or "
    "shared/data/trajectories).",
)
@click.option("--no-real", is_flag=True, help="Skip the real recorded sessions.")
@click.option(
    "--sessions",
    type=click.IntRange(min=1),
    default=None,
    help="At most this many real sessions (the largest).",
)
@click.option("--turns", default=None, help="Synthetic session lengths, e.g. 300,1000.")
@click.option("--seeds", default=None, help="Synthetic generator seeds, e.g. 0,1,2.")
@click.option("--strategies", default=None, help=f"Comma-separated subset of: {', '.join(NAMES)}.")
@click.option(
    "--scaling",
    "scaling",
    default=None,
    help="History lengths for the prepare() timing, e.g. 100,1000; 0 to skip.",
)
@click.option("--price-input", type=float, default=None, help="USD per million input tokens.")
@click.option("--price-output", type=float, default=None, help="USD per million output tokens.")
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the full report as JSON here.",
)
@click.option(
    "--chart",
    "chart_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the charts here (.html page or .svg).",
)
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def bench(
    quick: bool,
    long_run: bool,
    budget: int | None,
    real_budget: int | None,
    trajectories: Path | None,
    no_real: bool,
    sessions: int | None,
    turns: str | None,
    seeds: str | None,
    strategies: str | None,
    scaling: str | None,
    price_input: float | None,
    price_output: float | None,
    json_path: Path | None,
    chart_path: Path | None,
    no_progress: bool,
) -> None:
    """Price every context strategy side by side on synthetic and real sessions."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .chart import write_chart
    from .report import render
    from .run import BenchConfig, run_bench

    if long_run:
        _long(quick, json_path)
        return
    config = BenchConfig.quick() if quick else BenchConfig()
    changes: dict[str, Any] = {}
    if budget is not None:
        changes["budget"] = budget
    if real_budget is not None:
        changes["real_budget"] = real_budget
    if trajectories is not None:
        changes["trajectories"] = trajectories
    if no_real:
        changes["real"] = False
    if sessions is not None:
        changes["max_sessions"] = sessions
    lengths, seed_list = _ints(turns), _ints(seeds)
    if lengths is not None or seed_list is not None:
        lengths = lengths or tuple(dict.fromkeys(t for t, _ in config.synthetic))
        seed_list = seed_list or tuple(dict.fromkeys(s for _, s in config.synthetic))
        changes["synthetic"] = tuple((t, s) for t in lengths for s in seed_list if t > 0)
    if strategies is not None:
        chosen = tuple(s.strip() for s in strategies.split(",") if s.strip())
        unknown = [s for s in chosen if s not in NAMES]
        if unknown:
            raise click.BadParameter(
                f"unknown {', '.join(unknown)}; known: {', '.join(NAMES)}",
                param_hint="--strategies",
            )
        changes["strategies"] = chosen
    sizes = _ints(scaling)
    if sizes is not None:
        changes["scaling_sizes"] = tuple(n for n in sizes if n > 0)
    if price_input is not None or price_output is not None:
        base = config.pricing
        changes["pricing"] = Pricing(
            input_per_mtok=base.input_per_mtok if price_input is None else price_input,
            output_per_mtok=base.output_per_mtok if price_output is None else price_output,
            source="prices given on the command line",
        )
    config = replace(config, **changes)

    console = Console()
    if no_progress:
        report = run_bench(config)
    else:
        columns = (
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=console, transient=True) as bar:
            task = bar.add_task("bench", total=None)

            def advance(done: int, total: int, label: str) -> None:
                bar.update(task, completed=done, total=total, description=label[:60])

            report = run_bench(config, progress=advance)
    render(report, console)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(report.to_dict(), indent=1) + "\n", encoding="utf-8")
        console.print(f"JSON report: {json_path}")
    if chart_path is not None:
        console.print(f"chart: {write_chart(report, chart_path)}")


def _long(quick: bool, json_path: Path | None) -> None:
    from dataclasses import asdict

    from rich.console import Console

    from .longrun import measure_long, render_long
    from .run import machine_info

    console = Console()
    started = time.perf_counter()
    with console.status("long sessions…") as status:
        loops, colds = measure_long(quick, on_step=lambda label: status.update(label))
    elapsed = time.perf_counter() - started
    render_long(loops, colds, console)
    where = machine_info()
    console.print(f"ran in {elapsed:.0f} s on {where['cpus']} CPUs, Python {where['python']}")
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "loops": [asdict(p) for p in loops],
            "cold": [asdict(c) for c in colds],
            "machine": where,
            "seconds": round(elapsed, 1),
        }
        json_path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        console.print(f"JSON report: {json_path}")
