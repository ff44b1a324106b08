"""The fleet benchmark's smoke run: correctness with a worker killed, never speed.

Two worker processes on one PostgreSQL schema (and on SQLite, in the same run), worker 0
killed with SIGKILL halfway and its sessions resumed by another process with a root of its
own: every log is what its driver sent, every session resumes to its last view, and every
file a view names is readable from a fresh store with an empty root.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from context_compact.cli import main
from postgres_server import require


def schemas() -> set[str]:
    import psycopg

    with psycopg.connect(require()) as conn:
        rows = conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'cc_bench_%'")
        return {row[0] for row in rows}


def test_a_killed_workers_sessions_resume_on_another_with_nothing_lost_or_twice(
    tmp_path: Path,
) -> None:
    url = require()
    out = tmp_path / "fleet.json"
    args = ["bench", "--load", "--store", url, "--quick", "--turns", "8", "--sessions", "3"]
    result = CliRunner().invoke(main, [*args, "--json", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert [row["store"] for row in data["stores"]] == ["postgresql", "sqlite"]
    for row in data["stores"]:
        assert row["sessions"] == row["sessions_expected"] == 6 and row["failed_workers"] == []
        assert row["replayed"] == row["resumed"] == 6, row["problems"]
        assert row["files_named"] > 0 and row["files_unreadable"] == 0, row["problems"]
        assert row["prepare_ms"]["p99"] >= row["prepare_ms"]["p50"] > 0
    assert "fleet: worker processes on one store" in result.output
    assert data["schema"].startswith("cc_bench_") and data["schema"] not in schemas()  # dropped
