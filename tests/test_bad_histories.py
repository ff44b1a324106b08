"""Bad histories (issue 10): every public entry point, under every registry engine, refuses
them with ``InvalidHistory`` naming the index and the rule, and changes nothing; the CLI turns
one into a single line."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import stub_api as s
from context_compact import Compactor, InvalidHistory, MemoryStore
from context_compact.cli import main
from context_compact.registry import NAMES, load_plugins, policy_for
from context_compact.summary.prompts import SUMMARY_SYSTEM_PROMPT
from context_compact.testing.fakes import BenchSummarizer
from histories import call, results, user
from stub_api import Reply, StubAPI

load_plugins()  # every engine of the registry, those of installed packages (the bench) included


def result(tool_id: str, text: str = "ok") -> dict[str, Any]:
    return results((tool_id, text))


# (name, history, index of the first bad message, rule). -1: the history itself.
CASES: list[tuple[str, Any, int, str]] = [
    ("not a list", {"role": "user", "content": "hi"}, -1, "malformed"),
    ("a string", "fix the bug", -1, "malformed"),
    ("None", None, -1, "malformed"),
    ("a message that is not a dict", [user("t"), "oops"], 1, "malformed"),
    ("a message without a role", [user("t"), {"content": "x"}], 1, "malformed"),
    ("an unknown role", [user("t"), {"role": "narrator", "content": "x"}], 1, "malformed"),
    ("content None", [user("t"), {"role": "assistant", "content": None}], 1, "malformed"),
    ("a block that is not a dict", [user("t"), {"role": "user", "content": [7]}], 1, "malformed"),
    ("a tool_result without its tool_use", [user("t"), result("a")], 1, "orphan_result"),
    (
        "a tool_use never answered in the middle",
        [user("t"), call("a"), user("go on"), call("b"), result("b")],
        1,
        "unanswered_use",
    ),
    (
        "duplicate tool_use ids",
        [user("t"), call("a"), result("a"), call("a"), result("a")],
        3,
        "duplicate_id",
    ),
    (
        "two results for one id",
        [user("t"), call("a"), results(("a", "1"), ("a", "2"))],
        2,
        "duplicate_result",
    ),
    (
        "a result for an id answered earlier",
        [user("t"), call("a"), result("a"), call("b"), results(("b", "x"), ("a", "again"))],
        4,
        "orphan_result",
    ),
]


def sync_entry(name: str) -> Callable[[Compactor, Any], Any]:
    if name == "record":
        return lambda c, m: c.record(m)
    if name == "compact_history":
        return lambda c, m: c.compact_history(m, "t")
    return lambda c, m: getattr(c, name)(m, "t")


def async_entry(name: str) -> Callable[[Compactor, Any], Any]:
    def run(c: Compactor, m: Any) -> Any:
        if name == "arecord":
            return asyncio.run(c.arecord(m))
        return asyncio.run(getattr(c, name)(m, "t"))

    return run


ENTRIES: dict[str, Callable[[Compactor, Any], Any]] = {
    **{n: sync_entry(n) for n in ("prepare", "compact_history", "reactive_compact", "record")},
    **{n: async_entry(n) for n in ("aprepare", "acompact_history", "areactive_compact", "arecord")},
}


def compactor(engine: str) -> Compactor:
    return Compactor(policy_for(engine, context_limit=5_000), MemoryStore(), BenchSummarizer())


def snapshot(value: Any) -> str:
    return json.dumps(value, default=repr, sort_keys=True)


@pytest.mark.parametrize("engine", NAMES)
@pytest.mark.parametrize("entry", list(ENTRIES))
def test_every_bad_history_is_refused_naming_its_index_and_rule(engine: str, entry: str) -> None:
    call_it = ENTRIES[entry]
    for name, history, index, rule in CASES:
        before = snapshot(history)
        c = compactor(engine)
        with pytest.raises(InvalidHistory) as raised:
            call_it(c, history)
        assert (raised.value.index, raised.value.rule) == (index, rule), name
        assert f"message {index}: {rule}" in str(raised.value), name
        assert snapshot(history) == before, f"{name}: the caller's history was modified"
        assert c.events == [], name


@pytest.mark.parametrize("engine", NAMES)
def test_a_bad_tail_after_valid_calls_is_refused_at_the_callers_index(engine: str) -> None:
    c = compactor(engine)
    history: list[Any] = c.prepare([user("t"), call("a"), result("a", "x" * 50)], "t")
    good = c.prepare(history, "t")
    for bad, rule in [
        (result("a", "again"), "orphan_result"),
        (call("a"), "duplicate_id"),
        ({"role": "assistant", "content": None}, "malformed"),
    ]:
        with pytest.raises(InvalidHistory) as raised:
            c.prepare([*good, bad], "t")
        assert (raised.value.index, raised.value.rule) == (len(good), rule)
    # The refused calls left the engine where it was: the next good call goes on.
    after = c.prepare([*good, call("b"), result("b")], "t")
    assert after[-1] == result("b")


@pytest.mark.parametrize("engine", NAMES)
def test_a_tool_use_in_the_middle_answered_only_later_is_refused(engine: str) -> None:
    c = compactor(engine)
    view = c.prepare([user("t"), call("a")], "t")
    with pytest.raises(InvalidHistory) as raised:
        c.prepare([*view, user("never mind"), result("a")], "t")
    assert raised.value.rule in ("unanswered_use", "orphan_result")
    assert raised.value.index in (len(view) - 1, len(view), len(view) + 1)


def test_the_cli_reports_a_reused_tool_use_id_in_one_line(
    stub_api: StubAPI, tmp_path: Path
) -> None:
    """A model that answers with a tool_use id it already used: the history the loop would
    send next is invalid; the run stops with one line, the conversation saved."""
    (tmp_path / "notes.txt").write_text("remember the milk\n", encoding="utf-8")
    again = Reply(text="Again.", tool_calls=(s.ToolCall("read_file", {"path": "notes.txt"}, "t1"),))

    def model(body: Any) -> Any:
        if SUMMARY_SYSTEM_PROMPT[:40] in json.dumps(body):
            return Reply(text="summary")
        return again

    stub_api.enqueue(*[model] * 6)
    env = {"MODEL_ID": "claude-test", "ANTHROPIC_BASE_URL": stub_api.url}
    result = CliRunner().invoke(main, ["run", "read notes", "--workdir", str(tmp_path)], env=env)
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[-1].startswith("error:") and "Traceback" not in result.stderr, result.stderr
    assert [line for line in lines if line.startswith("error:")] == lines[-1:]
    assert "duplicate_id" in lines[-1] and "'t1'" in lines[-1]


def mixed_keys_call(tool_id: str) -> dict[str, Any]:
    """A call whose input's keys are an int and a str: JSON cannot order them to hash it."""
    use = {"type": "tool_use", "id": tool_id, "name": "edit", "input": {1: "a", "b": 2}}
    return {"role": "assistant", "content": [use]}


@pytest.mark.parametrize("entry", list(ENTRIES))
def test_a_tool_input_mixing_int_and_str_keys_is_refused_as_an_invalid_history(
    entry: str,
) -> None:
    for history in (
        [user("t"), mixed_keys_call("a"), result("a")],
        [user("t"), call("z"), result("z"), mixed_keys_call("a"), result("a")],
    ):
        c = compactor("default")
        with pytest.raises(InvalidHistory) as raised:
            ENTRIES[entry](c, history)
        assert raised.value.rule == "unserializable"
        assert raised.value.index == len(history) - 2
        assert "key 1 is not a string" in str(raised.value)
        assert "\n" not in str(raised.value)


def test_a_tool_input_mixing_keys_appended_to_a_known_history_is_refused_at_its_index() -> None:
    c = compactor("default")
    good = c.prepare([user("t"), call("a"), result("a")], "t")
    with pytest.raises(InvalidHistory) as raised:
        c.prepare([*good, mixed_keys_call("b"), result("b")], "t")
    assert (raised.value.index, raised.value.rule) == (len(good), "unserializable")
    assert c.prepare([*good, call("b"), result("b")], "t")[-1] == result("b")
