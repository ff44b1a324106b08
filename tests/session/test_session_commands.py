"""``sessions`` and ``recall`` read a work directory's sessions from the command line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from context_compact import Compactor, Policy
from context_compact.cli import main
from context_compact.store import workdir_store
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session
from histories import user


def run_session(workdir: Path, turns: int) -> str:
    store = workdir_store(workdir)
    c = Compactor(Policy.default(context_limit=4_000), store, BenchSummarizer())
    w = synthetic_session(turns, seed=2)
    messages: list[Any] = [user(w.request)]
    for turn in w.turns:
        messages = c.prepare(messages, w.request)
        messages += [turn.assistant, turn.results]
    c.prepare(messages, w.request)
    sid = c.session_id
    assert sid is not None
    store.close()
    return sid


def test_sessions_lists_each_session_with_its_turns_and_compactions(tmp_path: Path) -> None:
    first, second = run_session(tmp_path, 10), run_session(tmp_path, 40)
    out = CliRunner().invoke(main, ["sessions", "--workdir", str(tmp_path), "--json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert [r["id"] for r in rows] == [second, first]
    assert [r["turns"] for r in rows] == [40, 10]
    assert rows[0]["compactions"] > 0 and 0 < rows[0]["tokens_in_view"] <= 4_000
    table = CliRunner().invoke(main, ["sessions", "--workdir", str(tmp_path)])
    assert second in table.output


def test_recall_prints_a_compacted_result_in_full(tmp_path: Path) -> None:
    sid = run_session(tmp_path, 40)
    needle = synthetic_session(40, seed=2).turns[2].results["content"][0]["content"]
    out = CliRunner().invoke(
        main,
        ["recall", sid, needle[:50], "--workdir", str(tmp_path), "--limit", "10000000", "--json"],
    )
    assert out.exit_code == 0, out.output
    # A page that holds every hit gives the messages whole: the original is there.
    assert needle in json.loads(out.output)["text"]
    # A smaller page shows the match; its header says how to read the whole message.
    small = CliRunner().invoke(
        main, ["recall", sid, needle[:50], "--workdir", str(tmp_path), "--limit", "400", "--json"]
    )
    found = re.search(r'recall\("(message \d+)", offset=\d+\)', json.loads(small.output)["text"])
    assert found is not None
    args = ["recall", sid, found.group(1), "--workdir", str(tmp_path), "--limit", "10000000"]
    whole = CliRunner().invoke(main, [*args, "--json"])
    assert needle in json.loads(whole.output)["text"]


def test_session_commands_say_what_is_missing(tmp_path: Path) -> None:
    nothing = CliRunner().invoke(main, ["sessions", "--workdir", str(tmp_path)])
    assert nothing.exit_code == 0 and "no sessions in" in nothing.output
    run_session(tmp_path, 2)
    wrong = CliRunner().invoke(main, ["recall", "nope", "x", "--workdir", str(tmp_path)])
    assert wrong.exit_code == 1 and "no session 'nope'" in wrong.output
