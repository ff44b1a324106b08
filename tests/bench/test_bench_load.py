"""The load benchmark's smoke run: correctness under concurrency, never speed.

20 sessions at once in one process and 2 processes x 20 sessions on one database: the
database passes ``integrity_check``, every session's log is what its driver sent, and every
session resumes to the view it returned last. The checks themselves are shown to catch a
lost message and a damaged view.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from context_compact.cli import main
from context_compact.store import SqliteStore
from context_compact_bench.load import LoadConfig, SessionRun, drive, run_load, verify
from sqlite_rows import tamper_record

SMOKE = LoadConfig(sessions=20, processes=2, sessions_per_process=20, turns=4)


def test_concurrent_sessions_in_one_process_and_in_two_leave_no_corruption(
    tmp_path: Path,
) -> None:
    data = run_load(SMOKE, tmp_path)
    for phase, sessions in (("one_process", 20), ("processes", 40)):
        row = data[phase]
        assert row["integrity_check"] == "ok"
        assert row["sessions"] == sessions
        assert row["replayed"] == row["resumed"] == sessions, row["problems"]
        assert row["calls"] == sessions * (SMOKE.turns + 1)
        assert row["compactions"] > 0  # the sessions did compact while others wrote
        assert row["prepare_ms"]["p99"] >= row["prepare_ms"]["p50"] > 0


def test_the_check_catches_a_lost_message_and_a_wrong_view(tmp_path: Path) -> None:
    db = tmp_path / "load.db"
    runs, _ = drive(range(3), db, SMOKE)
    assert verify(db, runs, SMOKE)["replayed"] == 3
    reader = SqliteStore(db, read_only=True)
    logged = list(reader.records(runs[0].session))
    reader.close()
    # The last message logged (the journal's last records may be edits or events).
    last = max(pos for pos, record in enumerate(logged) if record["kind"] == "message")
    tamper_record(db, runs[0].session, last)
    wrong = SessionRun(**{**runs[1].__dict__, "view": "0" * 64})
    checked = verify(db, [runs[0], wrong, runs[2]], SMOKE)
    assert checked["replayed"] == 2 and checked["resumed"] == 1
    # The lost message: its journal is refused (a record missing, issue 18), its log differs
    # and its resume fails; the wrong view.
    assert len(checked["problems"]) == 4
    assert "record" in checked["problems"][0] and "missing" in checked["problems"][0]


def test_bench_load_prints_the_table_and_writes_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(LoadConfig, "quick", classmethod(lambda cls, **kw: SMOKE))
    out = tmp_path / "load.json"
    result = CliRunner().invoke(
        main, ["bench", "--load", "--quick", "--no-progress", "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "load: concurrent sessions on one SqliteStore" in result.output
    assert json.loads(out.read_text())["processes"]["replayed"] == 40
