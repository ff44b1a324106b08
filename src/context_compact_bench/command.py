"""``context-compact bench``: the click command (the CLI registers it with ``add_command``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .pricing import Pricing
from .strategies import STRATEGIES

if TYPE_CHECKING:
    pass
from .command_modes import (
    _fleet,
    _ints,
    _load,
    _scaling_suite,
    _store_io,
    _tokens,
    _with_progress,
    _write_json,
)

SUITE = "suite"
LONG_TURN_STEPS = 2_000
LONG_TURN_QUICK = 300


@click.command("bench")
@click.option("--quick", is_flag=True, help="Fewer turns, 3 real sessions, small scaling sizes.")
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
    help="Directory of recorded sessions (default: $CONTEXT_COMPACT_TRAJECTORIES, else the "
    "repository's tests/data/trajectories).",
)
@click.option("--no-real", is_flag=True, help="Skip the real recorded sessions.")
@click.option(
    "--sessions",
    type=click.IntRange(min=1),
    default=None,
    help="At most this many real sessions (the largest).",
)
@click.option(
    "--turns",
    default=None,
    help="Synthetic session lengths, e.g. 300,1000 (with --scaling alone: its checkpoints).",
)
@click.option("--seeds", default=None, help="Synthetic generator seeds, e.g. 0,1,2.")
@click.option(
    "--strategies", default=None, help=f"Comma-separated subset of: {', '.join(STRATEGIES)}."
)
@click.option(
    "--scaling",
    "scaling",
    is_flag=False,
    flag_value=SUITE,
    default=None,
    help="Alone: run only the scaling suite (per-turn time, memory and files from 1k to "
    "50k turns, cold starts, and the speed goals as ratios to the seed, each configuration "
    "in its own process; --quick: the same at a tenth of the sizes, minutes, else ~30 min). "
    "With history lengths, e.g. 100,1000: the bench's in-process prepare() timing; 0 skips it.",
)
@click.option(
    "--windows",
    default=None,
    help="Scaling suite and --long-turn: context windows in tokens (default 12500,200000).",
)
@click.option(
    "--stores",
    default=None,
    help="Scaling suite: stores for the default, of file,sqlite,memory (default file,sqlite).",
)
@click.option(
    "--cold",
    "cold_messages",
    type=click.IntRange(min=0),
    default=None,
    help="Scaling suite: messages of the cold-start history (default 20000; 0 skips).",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Scaling suite: configurations measured at once (more is faster, timings noisier).",
)
@click.option(
    "--load",
    is_flag=True,
    help="Alone: run only the load benchmark (1,000 sessions at once in one process, then 8 "
    "processes on one SQLite store; checked for corruption; --quick: 100 and 2; --turns: "
    "turns a session).",
)
@click.option(
    "--long-turn",
    is_flag=True,
    help="Alone: run only the long-turn workload (one request, then --steps tool steps with "
    "extended thinking on, every request checked against the Messages API's rules) for every "
    "strategy at 12,500 and 200,000 tokens (--windows or --budget to change).",
)
@click.option(
    "--steps",
    type=click.IntRange(min=1),
    default=None,
    help="Long turn: tool steps after the request (default 2,000; --quick 300).",
)
@click.option(
    "--store",
    "store_url",
    metavar="URL",
    default=None,
    help="With --load: the fleet benchmark instead, on this store (postgresql://...) and on "
    "SQLite in the same run (8 worker processes x 100 sessions x 200 turns, one killed and "
    "resumed; --quick: 2 x 5 x 20; --sessions, --turns: per worker).",
)
@click.option(
    "--tokens",
    is_flag=True,
    help="Alone: the token estimate's error per message against an exact tokenizer on the "
    "recorded sessions, before and after calibration (needs context-compact[tokens]).",
)
@click.option(
    "--store-io",
    is_flag=True,
    help="Alone: run only the store benchmark (bytes written per tool-result byte on a "
    "FileStore and on SqliteStore at 512/1024/4096-byte pages, 2,000 turns; recall p50/p99 at "
    "1k, 10k and 50k turns; --quick: 300 turns, recall at 1k; --turns: recall's lengths).",
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
@click.option(
    "--probes",
    is_flag=True,
    help="Also ask, wherever content leaves the view, what the agent can still answer (errors, "
    "files, last read, last result, next step, user constraints): in view, by one recall, or "
    "lost; tables per strategy and kind.",
)
@click.option(
    "--answerer",
    "answerer_url",
    metavar="URL",
    default=None,
    help="With --probes: also ask each probe of a model on this OpenAI-compatible server "
    "(http://host:port[/v1]), from the compacted view with read_file and recall as tools; its "
    "answers scored exactly, beside the model-free counts.",
)
@click.option(
    "--answerer-model",
    metavar="NAME",
    default=None,
    help="--answerer: the model's name (default: the first the server lists).",
)
@click.option(
    "--answerer-max",
    metavar="N",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="--answerer: probes asked per strategy and workload (oldest first).",
)
@click.option(
    "--real-peers",
    is_flag=True,
    help="Alone: our default, the real peers (the peers extra) and their models on the real "
    "sessions, time as a ratio to ours (--sessions, --real-budget, --trajectories apply).",
)
@click.option(
    "--peers-python",
    default=None,
    help="--real-peers: a Python 3.12+ with openhands-sdk, to run OpenHands in (default "
    "$CONTEXT_COMPACT_PEERS_PYTHON).",
)
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def bench(
    quick: bool,
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
    windows: str | None,
    stores: str | None,
    cold_messages: int | None,
    jobs: int,
    load: bool,
    long_turn: bool,
    steps: int | None,
    store_url: str | None,
    tokens: bool,
    store_io: bool,
    json_path: Path | None,
    chart_path: Path | None,
    probes: bool,
    answerer_url: str | None,
    answerer_model: str | None,
    answerer_max: int,
    real_peers: bool,
    peers_python: str | None,
    no_progress: bool,
) -> None:
    """Price every context strategy side by side on synthetic and real sessions.

    With --scaling alone: measure how prepare()'s time, memory and files grow with a
    session's length instead (--turns sets the checkpoints). With --long-turn: one request,
    then only tool calls with thinking on, for every strategy.
    """
    from rich.console import Console

    from .chart import write_chart
    from .report import render
    from .run import BenchConfig, run_bench

    if tokens:
        _tokens(trajectories, json_path)
        return
    if store_io:
        _store_io(quick, turns, json_path, no_progress)
        return
    if real_peers:
        from .peers.report import command

        data = command(quick, sessions, real_budget or budget, trajectories, peers_python)
        _write_json(Console(width=160), json_path, data)
        return
    if load and store_url:
        _fleet(store_url, quick, sessions, turns, json_path, no_progress)
        return
    if load:
        _load(quick, turns, json_path, no_progress)
        return
    if scaling == SUITE:
        unused = {
            "--budget": budget,
            "--real-budget": real_budget,
            "--trajectories": trajectories,
            "--no-real": no_real or None,
            "--sessions": sessions,
            "--seeds": seeds,
            "--strategies": strategies,
            "--price-input": price_input,
            "--price-output": price_output,
            "--chart": chart_path,
            "--long-turn": long_turn or None,
            "--steps": steps,
            "--probes": probes or None,
            "--answerer": answerer_url,
        }
        given = [name for name, value in unused.items() if value is not None]
        if given:
            raise click.UsageError(f"not used with --scaling alone: {', '.join(given)}")
        _scaling_suite(quick, turns, windows, stores, cold_messages, jobs, json_path, no_progress)
        return
    config = BenchConfig.quick() if quick else BenchConfig()
    changes: dict[str, Any] = {}
    if steps is not None and not long_turn:
        raise click.UsageError("--steps is for --long-turn")
    if long_turn:
        given = [
            name
            for name, value in {
                "--real-budget": real_budget,
                "--trajectories": trajectories,
                "--sessions": sessions,
                "--turns": turns,
                "--seeds": seeds,
                "--scaling": scaling,
                "--stores": stores,
                "--cold": cold_messages,
            }.items()
            if value is not None
        ]
        if given:
            raise click.UsageError(f"not used with --long-turn: {', '.join(given)}")
        changes.update(synthetic=(), real=False, scaling_sizes=())
        changes["long_turn"] = steps or (LONG_TURN_QUICK if quick else LONG_TURN_STEPS)
        budgets = _ints(windows)
        if budgets is not None:
            if not budgets or min(budgets) < 1_000:
                raise click.BadParameter("windows of at least 1,000 tokens", param_hint="--windows")
            changes["long_turn_budgets"] = budgets
        elif budget is not None:
            changes["long_turn_budgets"] = (budget,)
    if budget is not None:
        changes["budget"] = budget
    if real_budget is not None:
        changes["real_budget"] = real_budget
    if trajectories is not None:
        changes["trajectories"] = trajectories
    if no_real:
        changes["real"] = False
    if probes:
        changes["probes"] = True
    if answerer_url is not None:
        changes["answerer"] = _answerer(answerer_url, answerer_model, answerer_max, probes)
    if sessions is not None:
        changes["max_sessions"] = sessions
    lengths, seed_list = _ints(turns), _ints(seeds)
    if lengths is not None or seed_list is not None:
        lengths = lengths or tuple(dict.fromkeys(t for t, _ in config.synthetic))
        seed_list = seed_list or tuple(dict.fromkeys(s for _, s in config.synthetic))
        changes["synthetic"] = tuple((t, s) for t in lengths for s in seed_list if t > 0)
    if strategies is not None:
        chosen = tuple(s.strip() for s in strategies.split(",") if s.strip())
        unknown = [s for s in chosen if s not in STRATEGIES]
        if unknown:
            raise click.BadParameter(
                f"unknown {', '.join(unknown)}; known: {', '.join(STRATEGIES)}",
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
        report = _with_progress(console, lambda advance: run_bench(config, progress=advance))
    render(report, console)
    if probes:
        from .probe_report import render_probes

        render_probes(report, console)
    if report.answerer is not None:
        from .answer_counts import render_answers

        render_answers(report.results, report.answerer, console)
    _write_json(console, json_path, report.to_dict())
    if chart_path is not None:
        console.print(f"chart: {write_chart(report, chart_path)}")


def _answerer(url: str, model: str | None, most: int, probes: bool) -> Any:
    """The answerer's configuration, once its server answers (one line when it does not)."""
    from .answerer import AnswererConfig, api_url, server_models

    if not probes:
        raise click.UsageError("--answerer asks the probes: add --probes")
    try:
        server_models(url)
    except (OSError, ValueError) as error:
        why = getattr(error, "reason", None) or error
        raise click.ClickException(f"--answerer: no answer from {api_url(url)}: {why}") from None
    return AnswererConfig(url, model, most)
