"""The view handed out again: a copy the caller left alone is reused, one it edited in place
is copied afresh, and no object handed out is the engine's."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from context_compact import Compactor, MemoryStore, Policy
from context_compact.session.handout import Handout
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session


def _objects(value: Any) -> list[int]:
    """The ids of every dict and list inside ``value``."""
    if isinstance(value, dict):
        return [id(value), *(i for v in value.values() for i in _objects(v))]
    if isinstance(value, list):
        return [id(value), *(i for v in value for i in _objects(v))]
    return []


def test_the_next_view_does_not_show_what_the_caller_edited_in_the_last_one() -> None:
    w = synthetic_session(12, seed=2)
    c = Compactor(Policy.default(context_limit=400_000), MemoryStore(), BenchSummarizer())
    view = c.prepare([{"role": "user", "content": w.request}], w.request)
    for t in w.turns[:-1]:
        view = c.prepare([*view, t.assistant, t.results], w.request)
    sent = copy.deepcopy(view)
    # A caller moving its cache marker: edits two messages of the returned view in place.
    view[1]["content"][0]["cache_control"] = {"type": "ephemeral"}
    view[-1]["content"].append({"type": "text", "text": "edited"})
    last = w.turns[-1]
    after = c.prepare([*view, last.assistant, last.results], w.request)
    assert after[: len(sent)] == sent
    assert after[1] is not view[1] and after[-3] is not view[-1]
    # What the caller did not touch is handed out again as it was.
    assert after[2] is view[2]
    engine: Any = c.engine
    mine = {i for m in engine.session.state.shown.messages for i in _objects(m)}
    assert mine.isdisjoint(i for m in after for i in _objects(m))


def test_a_message_the_engine_changed_in_place_is_copied_again() -> None:
    handout = Handout()
    message: dict[str, Any] = {"role": "user", "content": [{"type": "text", "text": "a"}]}
    first = handout.copies([message])
    assert first == [message] and first[0] is not message
    assert handout.copies([message])[0] is first[0]
    message["content"][0]["text"] = "b"
    again = handout.copies([message])
    assert again == [message] and again[0] is not first[0]
    assert first[0]["content"][0]["text"] == "a"


# Every pair of JSON values Python calls equal that are other bytes in a request.
EQUAL_ACROSS_TYPES: list[tuple[Any, Any]] = [
    (True, 1),
    (False, 0),
    (1, 1.0),
    (0, 0.0),
    (True, 1.0),
    (0.0, -0.0),
    (1, True),
    (1.0, 1),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
    ([True], [1]),
    ({"x": False}, {"x": 0}),
]


@pytest.mark.parametrize(("was", "now"), EQUAL_ACROSS_TYPES)
def test_a_caller_edit_that_python_calls_equal_is_not_handed_out_again(was: Any, now: Any) -> None:
    assert was == now and json.dumps(was) != json.dumps(now)
    store = MemoryStore()
    c = Compactor(Policy.default(context_limit=400_000), store, BenchSummarizer(), session="s")
    use = {"type": "tool_use", "id": "t1", "name": "set", "input": {"value": was}}
    history = [
        {"role": "user", "content": "set it"},
        {"role": "assistant", "content": [use]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
        },
    ]
    view = c.prepare(copy.deepcopy(history), "set it")
    view[1]["content"][0]["input"]["value"] = now  # the caller's edit, in place
    nxt = c.prepare([*view, {"role": "assistant", "content": "done"}], "set it")
    resumed = Compactor(Policy.default(context_limit=400_000), store, session="s")
    assert json.dumps(nxt) == json.dumps(resumed.view())
    assert json.dumps(c.view()) == json.dumps(resumed.view())
    assert json.dumps(nxt[1]["content"][0]["input"]["value"]) == json.dumps(was)


def test_two_values_marshal_cannot_write_are_never_taken_for_the_same() -> None:
    from context_compact.session.handout import exactly

    assert exactly({"a": [1, "x", None, 2.5, True]}, {"a": [1, "x", None, 2.5, True]})
    assert not exactly({"a": object()}, {"a": object()})
