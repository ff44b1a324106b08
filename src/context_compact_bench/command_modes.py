"""The bench command's other modes (scaling suite, load, store I/O, fleet, tokens), each run
behind a progress bar and written as JSON when asked; ``command.bench`` picks one by its flags.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from rich.console import Console


T = TypeVar("T")
Advance = Callable[[int, int, str], None]


def _ints(value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        return tuple(int(v.replace("_", "")) for v in value.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {value!r}") from None


def _with_progress(console: Console, work: Callable[[Advance], T]) -> T:
    """``work(advance)`` under a transient progress bar."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

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

        return work(advance)


def _scaling_suite(
    quick: bool,
    turns: str | None,
    windows: str | None,
    stores: str | None,
    cold_messages: int | None,
    jobs: int,
    json_path: Path | None,
    no_progress: bool,
) -> None:
    from rich.console import Console

    from .report import render_scaling
    from .suite import STORES, SuiteConfig, run_suite

    config = SuiteConfig.quick() if quick else SuiteConfig()
    changes: dict[str, Any] = {"jobs": jobs}
    checkpoints, sizes = _ints(turns), _ints(windows)
    if checkpoints is not None:
        changes["checkpoints"] = tuple(n for n in checkpoints if n > 0)
    if sizes is not None:
        if not sizes or min(sizes) < 1_000:
            raise click.BadParameter("windows of at least 1,000 tokens", param_hint="--windows")
        changes["windows"] = sizes
    if stores is not None:
        chosen = tuple(s.strip() for s in stores.split(",") if s.strip())
        unknown = [s for s in chosen if s not in STORES]
        if unknown:
            raise click.BadParameter(
                f"unknown {', '.join(unknown)}; known: {', '.join(STORES)}", param_hint="--stores"
            )
        changes["stores"] = chosen
    if cold_messages is not None:
        changes["cold_messages"] = cold_messages
    config = replace(config, **changes)
    console = Console()
    if no_progress:
        data = run_suite(config)
    else:
        data = _with_progress(console, lambda advance: run_suite(config, progress=advance))
    render_scaling(data, console)
    _write_json(console, json_path, data)


def _load(quick: bool, turns: str | None, json_path: Path | None, no_progress: bool) -> None:
    from rich.console import Console

    from .load import LoadConfig, render_load, run_load

    config = LoadConfig.quick() if quick else LoadConfig()
    counts = _ints(turns)
    if counts:
        config = replace(config, turns=counts[0])
    console = Console()
    data = run_load(config, progress=None if no_progress else console.log)
    render_load(data, console)
    _write_json(console, json_path, data)


def _store_io(quick: bool, turns: str | None, json_path: Path | None, no_progress: bool) -> None:
    from rich.console import Console

    from .storeio import RECALL_TURNS, measure_store_io, table

    console = Console()
    data = measure_store_io(
        write_turns=300 if quick else 2_000,
        recall_turns=_ints(turns) or ((1_000,) if quick else RECALL_TURNS),
        queries=20 if quick else 100,
        on_step=None if no_progress else console.log,
    )
    console.print(table(data), markup=False, highlight=False)
    _write_json(console, json_path, data)


def _fleet(
    url: str,
    quick: bool,
    sessions: int | None,
    turns: str | None,
    json_path: Path | None,
    no_progress: bool,
) -> None:
    from rich.console import Console

    from .fleet import FleetConfig, render_fleet, run_fleet

    config = FleetConfig.quick() if quick else FleetConfig()
    counts = _ints(turns)
    if counts:
        config = replace(config, turns=counts[0])
    if sessions:
        config = replace(config, sessions=sessions)
    console = Console()
    data = run_fleet(config, url, progress=None if no_progress else console.log)
    render_fleet(data, console)
    _write_json(console, json_path, data)


def _tokens(trajectories: Path | None, json_path: Path | None) -> None:
    from rich.console import Console

    from .run import default_trajectories
    from .tokens import render_tokens, run_tokens

    root = trajectories or default_trajectories()
    if not root.is_dir():
        raise click.UsageError(f"--tokens: no recorded sessions at {root} (use --trajectories)")
    console = Console()
    data = run_tokens(root)
    if data is None:
        click.echo(
            "bench --tokens: no exact tokenizer installed (pip install 'context-compact[tokens]')"
        )
        return
    render_tokens(data, console)
    _write_json(console, json_path, data)


def _write_json(console: Console, path: Path | None, data: Any) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        console.print(f"JSON report: {path}")
