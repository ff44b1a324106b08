"""The bench end to end: run_bench's report, the JSON, the chart, the click command."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from context_compact.testing.trajectories import ENV_TRAJECTORIES, default_trajectories
from context_compact_bench import BenchConfig, run_bench
from context_compact_bench.chart import write_chart
from context_compact_bench.command import bench
from context_compact_bench.scaling import measure_scaling

DOCUMENTED = {
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
}

CHAT = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Fix the bug in parser.py"},
    {
        "role": "assistant",
        "content": "Reading the file.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "parser.py"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "def parse(x):\n    return x  # café\n"},
    {"role": "assistant", "content": "Done."},
]


@pytest.fixture
def trajectories(tmp_path: Path) -> Path:
    pytest.importorskip("context_compact.loaders", reason="the trajectory loaders are not here yet")
    directory = tmp_path / "trajectories"
    directory.mkdir()
    (directory / "chat.json").write_text(json.dumps(CHAT), encoding="utf-8")
    return directory


def tiny(trajectories: Path | None = None, **changes: Any) -> BenchConfig:
    config = BenchConfig(
        synthetic=((12, 0),),
        budget=3_000,
        trajectories=trajectories,
        real=trajectories is not None,
        scaling_sizes=(21, 41),
        scaling_samples=2,
        scaling_repeats=1,
    )
    return replace(config, **changes)


def test_run_bench_reports_every_strategy_on_every_workload_with_the_documented_keys(
    trajectories: Path,
) -> None:
    report = run_bench(tiny(trajectories))
    data = json.loads(json.dumps(report.to_dict()))
    assert {"results", "scaling", "machine"} <= set(data)
    workloads = {r["workload"] for r in data["results"]}
    assert workloads == {"synthetic-12x0", "openai_chat:chat"}
    assert len(data["results"]) == 2 * len(report.config.strategies)
    for row in data["results"]:
        assert set(row) >= DOCUMENTED
        assert row["violations"] == 0
    assert all(r["lost"] == 0 for r in data["results"] if r["strategy"] == "default")
    assert {p["strategy"] for p in data["scaling"]} == {
        "default loop",
        "seed loop",
        "default cold",
        "seed cold",
    }
    assert {p["messages"] for p in data["scaling"]} == {21, 41}
    assert data["machine"]["cpus"] and data["machine"]["python"]
    assert [r["strategy"] for r in data["aggregates"]["real"]] == list(report.config.strategies)


def test_a_missing_trajectories_directory_is_skipped_with_a_reason(tmp_path: Path) -> None:
    report = run_bench(tiny(tmp_path / "nowhere", scaling_sizes=()))
    assert report.workloads("real") == []
    assert report.skipped and "no trajectories directory" in report.skipped[0]


def test_the_trajectories_directory_comes_from_the_environment_first(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(ENV_TRAJECTORIES, str(tmp_path))
    assert default_trajectories() == tmp_path
    monkeypatch.delenv(ENV_TRAJECTORIES)
    # Else the repository's copy of the recorded sessions.
    assert default_trajectories().parts[-3:] == ("tests", "data", "trajectories")


def test_the_chart_is_valid_svg_or_an_html_page_of_svgs(tmp_path: Path) -> None:
    report = run_bench(tiny(strategies=("none", "seed", "default", "codex")))
    svg = write_chart(report, tmp_path / "chart.svg")
    root = ET.fromstring(svg.read_text(encoding="utf-8"))
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert root.findall(".//{http://www.w3.org/2000/svg}polyline")
    page = write_chart(report, tmp_path / "chart.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    pieces = page.split("<svg ")[1:]
    assert len(pieces) == 3
    for piece in pieces:
        ET.fromstring("<svg " + piece.split("</svg>")[0] + "</svg>")


def test_scaling_sets_loop_against_loop_and_cold_against_cold() -> None:
    points = measure_scaling((21, 41), budget=3_000, samples=2, repeats=1)
    assert [(p.strategy, p.messages) for p in points] == [
        ("default loop", 21),
        ("default loop", 41),
        ("seed loop", 21),
        ("seed loop", 41),
        ("default cold", 21),
        ("default cold", 41),
        ("seed cold", 21),
        ("seed cold", 41),
    ]
    assert all(p.p50_ms >= 0 and p.samples >= 1 for p in points)


def test_the_command_runs_writes_json_and_chart_and_prints_the_tables(
    tmp_path: Path, trajectories: Path
) -> None:
    out, chart = tmp_path / "bench.json", tmp_path / "bench.html"
    result = CliRunner().invoke(
        bench,
        [
            *["--turns", "10", "--seeds", "0", "--budget", "3000", "--scaling", "21"],
            *["--price-input", "1", "--price-output", "5"],
            *("--trajectories", str(trajectories), "--json", str(out), "--chart", str(chart)),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert "Synthetic sessions" in result.output and "Real recorded sessions" in result.output
    assert "prepare() time" in result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["config"]["pricing"]["input_per_mtok"] == 1.0
    assert data["config"]["pricing"]["output_per_mtok"] == 5.0
    assert {r["workload"] for r in data["results"]} == {"synthetic-10x0", "openai_chat:chat"}
    assert "<svg" in chart.read_text(encoding="utf-8")


def test_the_command_rejects_an_unknown_strategy() -> None:
    result = CliRunner().invoke(bench, ["--strategies", "default,magic", "--no-real"])
    assert result.exit_code != 0
    assert "magic" in result.output


def test_the_bench_names_each_file_it_could_not_load_and_fits_80_columns(
    tmp_path: Path, trajectories: Path
) -> None:
    (trajectories / "config.json").write_text('{"title": "not a log"}', encoding="utf-8")
    out = tmp_path / "bench.json"
    result = CliRunner().invoke(
        bench,
        [
            *["--turns", "10", "--seeds", "0", "--budget", "3000", "--scaling", "21"],
            *("--trajectories", str(trajectories), "--json", str(out)),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    skipped = json.loads(out.read_text(encoding="utf-8"))["skipped"]
    assert any("config.json" in note and "keys ['title']" in note for note in skipped)
    assert "config.json:couldnotload" in "".join(result.output.split())  # wrapped at 80
    # CliRunner is not a terminal: Rich lays the tables out for 80 columns, as in a pipe.
    assert max(len(line) for line in result.output.splitlines()) <= 80
    assert "strategy" in result.output and "st…" not in result.output
