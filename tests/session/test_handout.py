"""The view handed out again: a copy the caller left alone is reused, one it edited in place
is copied afresh, and no object handed out is the engine's."""

from __future__ import annotations

import copy
from typing import Any

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
