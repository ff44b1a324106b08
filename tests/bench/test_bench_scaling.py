"""The scaling suite (``bench --scaling``): every configuration measured at every checkpoint,
in its own process, like for like between the default and the seed; tiny sizes only (the
figures are measurements, never asserted as timings)."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rich.console import Console

from context_compact_bench import suite as scaling
from context_compact_bench.command import bench
from context_compact_bench.goals import goals as goals_of
from context_compact_bench.report import render_scaling
from context_compact_bench.suite import RunSpec, SuiteConfig, plan, run_isolated, run_suite

POINT_KEYS = {
    "turns",
    "messages",
    "samples",
    "p50_ms",
    "p99_ms",
    "max_ms",
    "dumps_p50_ms",
    "vs_dumps",
    "view_messages",
    "gc_full",
    "gc_max_ms",
    "rss_mb",
    "hwm_mb",
    "files",
    "disk_bytes",
    "written_bytes",
    "result_bytes",
}
COLD_KEYS = {"seconds", "next_ms", "rss_mb", "files", "view_messages", "all_seconds", "repeats"}


def tiny(**changes: Any) -> SuiteConfig:
    config = SuiteConfig(
        checkpoints=(4, 8),
        windows=(3_000,),
        stores=("memory", "file", "sqlite"),
        cold_messages=22,
        cold_repeats=2,
        dump_every=2,
        isolate=False,
    )
    return SuiteConfig(**{**config.as_dict(), **changes})


@pytest.fixture(scope="module")
def suite() -> dict[str, Any]:
    data = run_suite(tiny())
    return json.loads(json.dumps(data))  # what --json writes


def test_every_loop_reports_every_checkpoint_with_the_documented_keys(
    suite: dict[str, Any],
) -> None:
    stores = ["memory", "file", *(["sqlite"] if "sqlite" in scaling.available_stores() else [])]
    runs = [(r["engine"], r["store"]) for r in suite["loops"]]
    assert runs == [*(("default", s) for s in stores), *(("seed", s) for s in stores)]
    for run in suite["loops"]:
        assert "error" not in run, run.get("error")
        assert [p["turns"] for p in run["points"]] == [4, 8]
        for point in run["points"]:
            assert set(point) >= POINT_KEYS
            assert point["samples"] == 4 and point["messages"] == 1 + 2 * point["turns"]
            assert 0 <= point["p50_ms"] <= point["p99_ms"] <= point["max_ms"]
            assert point["vs_dumps"] > 0 and point["result_bytes"] > 0
        files = [p["files"] for p in run["points"]]
        assert files == sorted(files)


def test_the_seed_and_the_default_have_like_for_like_rows(suite: dict[str, Any]) -> None:
    loops = {r["engine"]: r for r in suite["loops"] if r["store"] == "file"}
    assert [p["turns"] for p in loops["seed"]["points"]] == [
        p["turns"] for p in loops["default"]["points"]
    ]
    cold = {r["engine"]: r for r in suite["cold"] if r["store"] == "file"}
    assert set(cold) == {"default", "seed"}
    for row in cold.values():
        assert set(row) >= COLD_KEYS
        assert row["messages"] == 21  # made odd: the history ends on tool results
        assert row["repeats"] == 2 and len(row["all_seconds"]) == 2
        assert row["seconds"] in row["all_seconds"]


def test_the_plan_runs_the_default_and_the_seed_on_each_store_and_skips_missing_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(scaling, "available_stores", lambda: ("file", "memory"))
    runs, skipped = plan(SuiteConfig(), "chunks")
    loops = [(r.engine, r.window, r.store) for r in runs if r.kind == "loop"]
    assert loops == [
        ("default", 12_500, "file"),
        ("seed", 12_500, "file"),
        ("default", 200_000, "file"),
        ("seed", 200_000, "file"),
    ]
    goal_turns = {19_000, 20_000, 10_000, 25_000, 50_000}
    assert all(goal_turns <= set(r.checkpoints) for r in runs if r.kind == "loop")
    cold = [(r.engine, r.window, r.store, r.messages) for r in runs if r.kind == "cold"]
    assert len(cold) == 12 and {m for *_, m in cold} == {19_999}
    assert {s for _, _, s, _ in cold} == {"file"}
    assert skipped == ["store 'sqlite': not in this package"]


def test_a_configuration_runs_in_a_process_of_its_own(tmp_path: Path) -> None:
    spec = RunSpec("loop", "default", 3_000, "memory", (3,), dump_every=1, chunk_turns=3)
    result = run_isolated(replace(spec, chunks=str(tmp_path)))
    assert result["pid"] != os.getpid()
    assert [p["turns"] for p in result["points"]] == [3]
    if Path("/proc/self/status").exists():
        assert result["points"][0]["rss_mb"] > 0


def test_a_failing_configuration_is_reported_and_the_others_still_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    measure = scaling.execute

    def execute(spec: RunSpec, step: Any = None) -> dict[str, Any]:
        if spec.engine == "seed":
            raise RuntimeError("boom")
        return measure(spec, step)

    monkeypatch.setattr(scaling, "execute", execute)
    data = run_suite(tiny(stores=("memory",), cold_messages=0))
    assert [r.get("error") for r in data["loops"]] == [None, "RuntimeError: boom"]


def test_the_tables_fit_80_columns(suite: dict[str, Any]) -> None:
    console = Console(width=80, record=True, force_terminal=False)
    render_scaling(suite, console)
    text = console.export_text()
    assert "prepare() per turn in the SDK loop (ms), window 3,000 tokens" in text
    assert "Cold start" in text
    assert all(len(line.rstrip()) <= 80 for line in text.splitlines())
    # Rows are not wrapped: a run's name and its first figures share a line.
    assert any(line.startswith("default memory") and "4" in line for line in text.splitlines())


def test_bench_scaling_alone_runs_the_suite_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "scaling.json"
    result = CliRunner().invoke(
        bench,
        [
            *("--scaling", "--quick", "--turns", "3", "--windows", "3000"),
            *("--stores", "memory", "--cold", "7", "--no-progress", "--json", str(out)),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert "prepare() per turn in the SDK loop" in result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["kind"] == "scaling" and data["config"]["checkpoints"] == [3]
    assert [(r["engine"], r["store"]) for r in data["loops"]] == [
        ("default", "memory"),
        ("seed", "memory"),
    ]
    assert [r["engine"] for r in data["cold"]] == ["default", "seed"]
    assert all("error" not in r for r in [*data["loops"], *data["cold"]])


def test_bench_scaling_alone_refuses_options_of_the_main_bench() -> None:
    result = CliRunner().invoke(bench, ["--scaling", "--chart", "x.svg"])
    assert result.exit_code != 0 and "--chart" in result.output
    result = CliRunner().invoke(bench, ["--scaling", "--stores", "tape"])
    assert result.exit_code != 0 and "tape" in result.output


def test_the_goals_set_the_default_against_the_seed_on_the_same_span_and_store() -> None:
    config = tiny(checkpoints=(2, 4, 6, 8), p99_span=(6, 8), rss_spans=((2, 4), (4, 8)))
    data = json.loads(json.dumps(run_suite(replace(config, stores=("memory",)))))
    rows = {(g["measure"], g["span"]): g for g in data["goals"]}
    rss = {("RSS growth MB", "turns 2-4"), ("RSS growth MB", "turns 4-8")}
    has_rss = Path("/proc/self/status").exists()  # resident memory is read from /proc
    assert set(rows) == {("p99 ms", "turns 7-8"), ("cold start s", "21 messages")} | (
        rss if has_rss else set()
    )
    loops = {r["engine"]: r for r in data["loops"]}
    p99 = rows[("p99 ms", "turns 7-8")]
    assert p99["default"] == loops["default"]["points"][-1]["p99_ms"]
    assert p99["seed"] == loops["seed"]["points"][-1]["p99_ms"]
    if p99["seed"]:
        assert p99["ratio"] == round(p99["default"] / p99["seed"], 3)
    assert p99["met"] == (p99["default"] <= 5 and p99["default"] <= p99["seed"])
    cold = {r["engine"]: r for r in data["cold"]}
    assert rows[("cold start s", "21 messages")]["seed"] == cold["seed"]["seconds"]


def test_a_p99_span_with_a_checkpoint_inside_it_has_no_goal_row() -> None:
    config = tiny(checkpoints=(4, 6, 8), p99_span=(4, 8), cold_messages=0, stores=("memory",))
    data = run_suite(config)
    assert [g for g in data["goals"] if g["measure"] == "p99 ms"] == []


def test_the_goals_table_fits_80_columns(suite: dict[str, Any]) -> None:
    console = Console(width=80, record=True, force_terminal=False)
    render_scaling({**suite, "goals": goals_of(suite)}, console)
    text = console.export_text()
    assert "Goals: the default against the seed" in text
    assert all(len(line.rstrip()) <= 80 for line in text.splitlines())
