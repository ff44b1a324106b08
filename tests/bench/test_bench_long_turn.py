"""The bench's long-turn workload: the model thinks exactly when it opens a turn, and the
bench's Messages API checker refuses what the API refuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from context_compact.store.memory import MemoryStore
from context_compact.testing.api_check import final_turn_opener, refusal, sign, thinking_block
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.replay import replay
from context_compact_bench.command import bench
from context_compact_bench.longturn import at_budget, long_turn_script
from context_compact_bench.strategies import Setup, build

REQUEST = {"role": "user", "content": "Fix the parser."}


def use(i: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": i, "name": "bash", "input": {"command": "ls"}}


def result(i: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": i, "content": "ok"}


class Recording:
    """A strategy that records each view it returns (and hands it on unchanged)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.views: list[list[Any]] = []

    def prepare(self, messages: list[Any], active_request: str) -> list[Any]:
        view = self.inner.prepare(messages, active_request)
        self.views.append(list(view))
        return view


def test_the_default_thinks_exactly_at_each_turn_start_and_no_request_is_refused() -> None:
    budget = 6_000
    script = at_budget(long_turn_script(60), budget)
    store, summarizer = MemoryStore("/memory"), BenchSummarizer()
    strategy = Recording(build("default", Setup(budget, store, summarizer)))
    out = replay(strategy, script, store=store, root="/memory", overhead_tokens=0, window=budget)
    assert out.error is None
    assert out.api_refusals == 0, out.first_refusal
    assert out.over_budget_calls == 0
    assert out.lost == 0
    starts = 0
    for index, view in enumerate(strategy.views[:-1]):
        # What the model appended after this call is in the next call's input.
        opened = script.step(index, view)[0]["content"][0]["type"] == "thinking"
        assert opened == (final_turn_opener(view) is None), index
        starts += opened
    assert script.step(0, strategy.views[0])[0]["content"][0]["type"] == "thinking"
    # A summary closed the turn at least once, and the model thought again after it.
    assert summarizer.calls >= 1
    assert starts >= 2
    assert out.turn_starts == starts + (final_turn_opener(strategy.views[-1]) is None)


def test_the_checker_refuses_a_final_turn_that_does_not_open_with_thinking() -> None:
    plain = [
        REQUEST,
        {"role": "assistant", "content": [use("a")]},
        {"role": "user", "content": [result("a")]},
    ]
    assert refusal(plain, thinking=True) is not None
    assert "final assistant turn" in str(refusal(plain, thinking=True))
    assert refusal(plain, thinking=False) is None
    thought = thinking_block("Read the file first.")
    good = [REQUEST, {"role": "assistant", "content": [thought, use("a")]}, plain[2]]
    assert refusal(good) is None
    # Later steps of the same turn need no thinking of their own.
    later = [
        *good,
        {"role": "assistant", "content": [use("b")]},
        {"role": "user", "content": [result("b")]},
    ]
    assert refusal(later) is None
    # A new user message opens a new turn: the assistant after it must think again.
    new_turn = [
        *good,
        {"role": "assistant", "content": "Fixed."},
        {"role": "user", "content": "Now the docs."},
        {"role": "assistant", "content": [use("c")]},
        {"role": "user", "content": [result("c")]},
    ]
    assert refusal(new_turn) is not None


def test_the_checker_refuses_modified_thinking_and_broken_tool_pairs() -> None:
    edited = {"type": "thinking", "thinking": "Something else.", "signature": sign("Read it.")}
    assert (
        refusal(
            [
                REQUEST,
                {"role": "assistant", "content": [edited, use("a")]},
                {"role": "user", "content": [result("a")]},
            ]
        )
        is not None
    )
    unanswered = [
        REQUEST,
        {"role": "assistant", "content": [thinking_block("t"), use("a")]},
        {"role": "user", "content": "go on"},
    ]
    assert "without a tool_result" in str(refusal(unanswered, thinking=False))
    orphan = [REQUEST, {"role": "user", "content": [result("z")]}]
    assert "no tool_use" in str(refusal(orphan, thinking=False))


def test_bench_long_turn_writes_api_refusals_per_strategy(tmp_path: Path) -> None:
    out = tmp_path / "long.json"
    args = ["--long-turn", "--steps", "20", "--windows", "12500", "--strategies", "default,none"]
    run = CliRunner().invoke(bench, [*args, "--no-progress", "--json", str(out)])
    assert run.exit_code == 0, run.output
    rows = json.loads(out.read_text(encoding="utf-8"))["results"]
    assert {(r["strategy"], r["workload"]) for r in rows} == {
        ("default", "long-turn-20-w12500"),
        ("none", "long-turn-20-w12500"),
    }
    assert all(r["api_refusals"] == 0 and r["turns"] == 20 for r in rows)
    assert "refused" in run.output
    bad = CliRunner().invoke(bench, ["--steps", "20", "--no-progress"])
    assert bad.exit_code != 0
