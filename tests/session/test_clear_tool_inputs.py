"""``clear_tool_inputs``, against the peer behaviour it mirrors: Anthropic's context editing
``clear_tool_uses_20250919`` clears only tool results by default, and with
``clear_tool_inputs`` also the tool calls' parameters of the cleared pairs (``true``: every
tool; a list: those tools), never a call whose result stays. Here the input becomes a
placeholder naming the line of a file holding the original: nothing lost, in two reads
(the file, then its line); the call keeps its id and name, so the pairs stay valid for the
Messages API; a resumed session is byte-identical."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import context_compact.session.cadence as cadence
from api_rules import sign, thinking_request, violation_text
from context_compact import Compactor, MemoryStore, Policy, check
from context_compact.markers import INPUT_CLEARED

REQUEST = "grep every log part and remember the notes"


def output(k: int) -> str:
    return f"needle-{k:03d}\n" + f"log {k:03d} line: status=ok latency=12ms\n" * 60


def arguments(k: int) -> dict[str, Any]:
    return {"pattern": f"needle-{k:03d}", "paths": [f"logs/part-{k}.log"], "context": k % 4}


def turn(k: int, tool: str) -> list[dict[str, Any]]:
    thought = f"I will grep part {k}."
    use = {"type": "tool_use", "id": f"t{k:03d}", "name": tool, "input": arguments(k)}
    result = {"type": "tool_result", "tool_use_id": f"t{k:03d}", "content": output(k)}
    return [
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": thought, "signature": sign(thought)}, use],
        },
        {"role": "user", "content": [result]},
    ]


def views(cc: Compactor, turns: int = 40, tool_of: Any = lambda k: "grep") -> list[Any]:
    """The docs' loop (append each turn to the list ``prepare`` returned): every view."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": REQUEST}]
    out = []
    for k in range(turns):
        messages = cc.prepare(messages + turn(k, tool_of(k)), REQUEST)
        assert check(messages) == []
        out.append(messages)
    return out


@pytest.fixture(autouse=True)
def clearings_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    # A summary only when a clearing cannot reach the low-water mark: what is tested is what
    # a clearing does to inputs, which a summary riding on it would take away at once.
    monkeypatch.setattr(cadence, "SUMMARY_PAYOFF", 0.0)


def compactor(**knobs: Any) -> Compactor:
    # Marks under which this loop clears without a summary in the same call (a summary would
    # take the cleared results at once): the knob is what is tested, not the marks.
    marks = {"high_water": 0.85, "low_water": 0.40}
    return Compactor(Policy.default(context_limit=12_000, **{**marks, **knobs}), MemoryStore())


def blocks(view: list[Any], kind: str) -> list[dict[str, Any]]:
    return [
        block
        for message in view
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == kind
    ]


def cleared(view: list[Any]) -> tuple[set[str], set[str]]:
    """The ids whose result, and whose input, the view shows cleared."""
    results = {
        b["tool_use_id"]
        for b in blocks(view, "tool_result")
        if str(b["content"]).startswith("[Tool result cleared")
    }
    inputs = {b["id"] for b in blocks(view, "tool_use") if INPUT_CLEARED in b["input"]}
    return results, inputs


def test_by_default_only_results_are_cleared_and_every_call_keeps_its_input() -> None:
    all_views = views(compactor())
    assert any(cleared(view)[0] for view in all_views), "nothing was cleared"
    for view in all_views:
        for use in blocks(view, "tool_use"):
            assert use["input"] == arguments(int(use["id"][1:]))


def test_with_clear_tool_inputs_the_inputs_of_exactly_the_cleared_pairs_are_cleared() -> None:
    all_views = views(compactor(clear_tool_inputs=True))
    assert any(cleared(view)[1] for view in all_views), "no input was cleared"
    for view in all_views:
        results, inputs = cleared(view)
        assert inputs == results
        for use in blocks(view, "tool_use"):
            if use["id"] not in inputs:
                assert use["input"] == arguments(int(use["id"][1:]))
            else:
                assert list(use["input"]) == [INPUT_CLEARED]
                assert use["name"] == "grep"


def test_a_cleared_input_is_two_reads_away_the_file_then_its_line() -> None:
    cc = compactor(clear_tool_inputs=True)
    view = max(views(cc), key=lambda view: len(cleared(view)[1]))
    found = 0
    for use in blocks(view, "tool_use"):
        if INPUT_CLEARED not in use["input"]:
            continue
        marker = use["input"][INPUT_CLEARED]
        where = marker.rsplit(" at ", 1)[1].removesuffix("]")
        path, _, lines = where.partition(" lines ")
        line = int(lines.split("-")[0])
        assert cc.store.issued(path)
        saved = json.loads(cc.store.read_text(path).splitlines()[line - 1])
        assert saved == {"id": use["id"], "name": "grep", "input": arguments(int(use["id"][1:]))}
        assert f"{len(json.dumps(saved['input'])):,} chars" in marker
        found += 1
    assert found > 0


def test_a_list_of_tools_clears_only_those_tools_inputs() -> None:
    tool_of = {0: "grep", 1: "read_file"}
    all_views = views(compactor(clear_tool_inputs=("grep",)), tool_of=lambda k: tool_of[k % 2])
    results_seen: set[str] = set()
    for view in all_views:
        results, inputs = cleared(view)
        results_seen |= results
        names = {b["id"]: b["name"] for b in blocks(view, "tool_use")}
        assert inputs == {i for i in results if names.get(i) == "grep"}
    assert any(int(i[1:]) % 2 for i in results_seen), "no read_file result was cleared"


def test_an_excluded_tool_keeps_its_result_and_its_input() -> None:
    policy = {"clear_tool_inputs": True, "exclude_tools": ("memory",)}
    all_views = views(compactor(**policy), tool_of=lambda k: "memory" if k % 3 == 0 else "grep")
    for view in all_views:
        results, inputs = cleared(view)
        assert all(int(i[1:]) % 3 for i in results | inputs)
    assert any(cleared(view)[1] for view in all_views)


def test_views_with_cleared_inputs_are_valid_messages_api_requests_with_thinking_on() -> None:
    for view in views(compactor(clear_tool_inputs=True)):
        assert violation_text(thinking_request(view)) is None


def test_a_resumed_session_with_cleared_inputs_is_byte_identical() -> None:
    cc = compactor(clear_tool_inputs=True)
    resumed_with_cleared_inputs = 0
    view: list[Any] = [{"role": "user", "content": REQUEST}]
    for k in range(40):
        view = cc.prepare(view + turn(k, "grep"), REQUEST)
        again = Compactor(cc.policy, cc.store, session=cc.session_id)
        assert json.dumps(again.view()) == json.dumps(view), f"turn {k}"
        resumed_with_cleared_inputs += bool(cleared(view)[1])
    assert resumed_with_cleared_inputs > 0


@pytest.mark.parametrize("bad", ["grep", ("grep", 3), 1, None])
def test_clear_tool_inputs_is_a_bool_or_tool_names(bad: Any) -> None:
    with pytest.raises(ValueError, match="clear_tool_inputs"):
        Policy.default(clear_tool_inputs=bad)


def test_clear_tool_inputs_given_as_a_list_is_kept_as_a_tuple() -> None:
    assert Policy.default(clear_tool_inputs=["grep"]).clear_tool_inputs == ("grep",)


TOOLS = ("grep", "read_file", "memory")


@settings(max_examples=15)
@given(
    tools=st.lists(st.sampled_from(TOOLS), min_size=25, max_size=45),
    sizes=st.lists(st.integers(20, 120), min_size=45, max_size=45),
    inputs=st.sampled_from([True, ("grep",), ("grep", "memory")]),
    excluded=st.sampled_from([(), ("memory",)]),
)
def test_every_cleared_input_belongs_to_a_cleared_result_and_is_two_reads_away(
    tools: list[str], sizes: list[int], inputs: Any, excluded: tuple[str, ...]
) -> None:
    """The law, on any mix of tools and result sizes: a call's input is either its original
    or a placeholder, a placeholder only where the result is cleared too and the tool is one
    named, never for an excluded tool; each placeholder's line holds the original."""
    cc = Compactor(
        Policy.default(context_limit=9_000, clear_tool_inputs=inputs, exclude_tools=excluded),
        MemoryStore(),
    )
    named = set(TOOLS) if inputs is True else set(inputs)
    view: list[Any] = [{"role": "user", "content": REQUEST}]
    for k, tool in enumerate(tools):
        step = turn(k, tool)
        step[1]["content"][0]["content"] = output(k)[: 60 * sizes[k]]
        view = cc.prepare(view + step, REQUEST)
        assert check(view) == []
        results, cleared_inputs = cleared(view)
        for use in blocks(view, "tool_use"):
            if use["id"] not in cleared_inputs:
                assert use["input"] == arguments(int(use["id"][1:]))
                continue
            assert use["id"] in results and use["name"] in named - set(excluded)
            where = use["input"][INPUT_CLEARED].rsplit(" at ", 1)[1].removesuffix("]")
            path, _, lines = where.partition(" lines ")
            line = cc.store.read_text(path).splitlines()[int(lines.split("-")[0]) - 1]
            assert json.loads(line)["input"] == arguments(int(use["id"][1:]))
