"""``context-compact undo ID`` takes back the newest compaction of a stored session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from context_compact import Compactor, Policy
from context_compact.cli import main
from context_compact.store import workdir_store
from context_compact.testing.workload import synthetic_session
from histories import user


def compacted_session(workdir: Path) -> tuple[str, list[Any]]:
    store = workdir_store(workdir)
    c = Compactor(Policy.default(context_limit=8_000), store)
    w = synthetic_session(12, seed=4)
    messages: list[Any] = [user(w.request)]
    for turn in w.turns:
        messages = c.prepare([*messages, turn.assistant, turn.results], w.request)
    view = c.compact_history(messages, w.request)  # a summary to take back
    sid = c.session_id
    assert sid is not None and "[Compacted]" in json.dumps(view)
    store.close()
    return sid, view


def test_undo_takes_back_the_newest_compaction_of_a_stored_session(tmp_path: Path) -> None:
    sid, _ = compacted_session(tmp_path)
    out = CliRunner().invoke(main, ["undo", sid[:6], "--workdir", str(tmp_path), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["session"] == sid and "undone" in data["note"]
    assert data["tokens_after"] > data["tokens_before"]
    # A resume sends the view without the summary; the summary stays in the log.
    store = workdir_store(tmp_path)
    try:
        resumed = Compactor(Policy.default(context_limit=8_000), store, session=sid).view()
        assert "[Compacted]" not in json.dumps(resumed)
        assert any(r.get("op") == "summarize" for r in store.records(sid))
    finally:
        store.close()


def test_undo_with_nothing_left_to_take_back_is_one_line_and_changes_nothing(
    tmp_path: Path,
) -> None:
    store = workdir_store(tmp_path)
    c = Compactor(Policy.default(), store)
    c.prepare([user("just a question")], "just a question")
    sid = str(c.session_id)
    store.close()
    out = CliRunner().invoke(main, ["undo", sid, "--workdir", str(tmp_path)])
    assert out.exit_code == 1
    assert out.output.count("\n") == 1 and out.output.startswith("Error:")
    assert "Traceback" not in out.output


def test_inspect_marks_the_undone_compaction_and_times_each_summary(tmp_path: Path) -> None:
    sid, _ = compacted_session(tmp_path)
    assert CliRunner().invoke(main, ["undo", sid, "--workdir", str(tmp_path)]).exit_code == 0
    out = CliRunner().invoke(main, ["inspect", sid, "--workdir", str(tmp_path), "--width", "100"])
    assert out.exit_code == 0, out.output
    undone = [line for line in out.output.splitlines() if "(undone)" in line]
    assert len(undone) == 1 and "compact_history (undone)" in undone[0]
    assert "undo_compaction" in out.output
    assert "summary asked for at the trigger at " in out.output
    assert "the agent waited" in out.output
    data = json.loads(
        CliRunner().invoke(main, ["inspect", sid, "--workdir", str(tmp_path), "--json"]).output
    )
    summaries = [e for e in data["events"] if e["stage"] == "compact_history"]
    assert [e["undone"] for e in summaries] == [True]
    timing = summaries[0]["timing"]
    assert timing["ahead"] is False and timing["ready"] >= timing["started"]
    assert timing["waited"] >= 0
