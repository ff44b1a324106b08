"""Every way a user's loop hands its history back is recognized, under both presets.

The SDK docs write a tool loop as ``messages = prepare(messages)``, then
``messages.append(reply)`` and ``messages.append(results)``: the list appended to is the one
``prepare`` returned. Others keep their own full history, assign in place, or pass a copy.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from context_compact import Compactor, InvalidHistory, MemoryStore, Policy, check
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session
from histories import assistant, call, results, user

Message = dict[str, Any]
TURNS = 60


def default() -> Compactor:
    policy = Policy.default(context_limit=6_000)
    return Compactor(policy, MemoryStore(), BenchSummarizer(), session="s")


def seed() -> Compactor:
    return Compactor(
        Policy.seed(context_limit=24_000, echo=False), MemoryStore(), BenchSummarizer()
    )


def logged(c: Compactor) -> list[Message]:
    sid = c.session_id
    assert sid is not None
    return [r["message"] for r in c.store.records(sid) if r["kind"] == "message"]


def sdk_loop(c: Compactor, turns: int) -> list[Message]:
    w = synthetic_session(turns, seed=4)
    messages: list[Message] = [user(w.request)]
    for turn in w.turns:
        messages = c.prepare(messages, w.request)
        assert check(messages) == []
        messages.append(turn.assistant)
        messages.append(turn.results)
    return c.prepare(messages, w.request)


def slice_loop(c: Compactor, turns: int) -> list[Message]:
    w = synthetic_session(turns, seed=4)
    messages: list[Message] = [user(w.request)]
    for turn in w.turns:
        messages[:] = c.prepare(messages, w.request)
        messages += [turn.assistant, turn.results]
    return c.prepare(messages, w.request)


def own_history_loop(c: Compactor, turns: int) -> list[Message]:
    w = synthetic_session(turns, seed=4)
    history: list[Message] = [user(w.request)]
    view: list[Message] = []
    for turn in w.turns:
        view = c.prepare(history, w.request)
        assert check(view) == []
        history += [turn.assistant, turn.results]
    return c.prepare(history, w.request)


def copy_loop(c: Compactor, turns: int) -> list[Message]:
    w = synthetic_session(turns, seed=4)
    messages: list[Message] = [user(w.request)]
    for turn in w.turns:
        messages = copy.deepcopy(c.prepare(messages, w.request))
        messages += [turn.assistant, turn.results]
    return c.prepare(messages, w.request)


LOOPS: list[Callable[[Compactor, int], list[Message]]] = [
    sdk_loop,
    slice_loop,
    own_history_loop,
    copy_loop,
]


@pytest.mark.parametrize("loop", LOOPS, ids=lambda f: f.__name__)
def test_every_loop_idiom_logs_every_message_exactly_once_under_the_default(
    loop: Callable[[Compactor, int], list[Message]],
) -> None:
    c = default()
    view = loop(c, TURNS)
    w = synthetic_session(TURNS, seed=4)
    expected = [user(w.request)] + [m for t in w.turns for m in (t.assistant, t.results)]
    assert logged(c) == expected
    assert view[-1] == expected[-1] and view[-2] == expected[-2]
    assert check(view) == []
    assert any(e.stage == "summarize" for e in c.events), "the session must have compacted"
    assert not [e for e in c.events if e.stage == "session_restart"]


@pytest.mark.parametrize("loop", LOOPS, ids=lambda f: f.__name__)
def test_every_loop_idiom_gives_the_same_views_under_the_default(
    loop: Callable[[Compactor, int], list[Message]],
) -> None:
    assert loop(default(), TURNS) == sdk_loop(default(), TURNS)


@pytest.mark.parametrize("loop", LOOPS, ids=lambda f: f.__name__)
def test_every_loop_idiom_keeps_the_seed_valid_and_current(
    loop: Callable[[Compactor, int], list[Message]],
) -> None:
    view = loop(seed(), TURNS)
    newest = synthetic_session(TURNS, seed=4).turns[-1].results["content"][0]["tool_use_id"]
    assert check(view) == []
    # S-4.1: over the limit, the seed replaces the whole history by one summary message.
    if len(view) == 1:
        assert view[0]["content"].startswith("[Compacted]")
    else:
        assert view[-1]["content"][0]["tool_use_id"] == newest


def test_the_sdk_loop_does_not_touch_the_callers_lists_or_messages() -> None:
    c = default()
    w = synthetic_session(30, seed=2)
    messages: list[Message] = [user(w.request)]
    for turn in w.turns:
        frozen = copy.deepcopy(messages)
        out = c.prepare(messages, w.request)
        assert messages == frozen
        assert out is not messages
        messages = out
        messages.append(turn.assistant)
        messages.append(turn.results)


def test_the_same_content_twice_is_two_messages_with_two_ids() -> None:
    c = default()
    history = [user("go"), assistant("ok"), user("continue"), assistant("ok"), user("continue")]
    c.prepare(history, "go")
    sid = c.session_id
    assert sid is not None
    records = [r for r in c.store.records(sid) if r["kind"] == "message"]
    assert len(records) == 5
    assert len({r["id"] for r in records}) == 5
    assert [r["parent"] for r in records[1:]] == [r["id"] for r in records[:-1]]


def test_passing_the_same_list_twice_logs_nothing_new() -> None:
    c = default()
    history = [user("go"), assistant("ok")]
    first = c.prepare(history, "go")
    assert c.prepare(first, "go") == first
    assert c.prepare(history, "go") == first
    assert len(logged(c)) == 2


def test_an_edited_history_starts_a_new_conversation_and_keeps_the_old_one() -> None:
    c = default()
    c.prepare([user("first task"), call("a"), results(("a", "secret output 1"))], "first task")
    out = c.prepare([user("first task, reworded"), assistant("sure")], "first task, reworded")
    assert out == [user("first task, reworded"), assistant("sure")]
    assert [e.stage for e in c.events] == ["session_restart"]
    assert "secret output 1" in str(c.recall("secret output"))


def test_a_caller_who_restarts_from_scratch_gets_a_view_of_the_new_conversation_only() -> None:
    c = default()
    sdk_loop(c, 20)
    out = c.prepare([user("a new task")], "a new task")
    assert out == [user("a new task")]


def test_invalid_new_messages_are_refused_with_their_index_in_the_callers_list() -> None:
    c = default()
    view = c.prepare([user("go"), call("a"), results(("a", "x"))], "go")
    with pytest.raises(InvalidHistory) as info:
        c.prepare([*view, call("b"), user("no results")], "go")
    assert (info.value.index, info.value.rule) == (len(view), "unanswered_use")
    with pytest.raises(InvalidHistory) as info:
        c.prepare([*view, call("a"), results(("a", "again"))], "go")
    assert info.value.rule == "duplicate_id"
    # Nothing of the refused calls was logged.
    assert len(logged(c)) == 3


def test_micro_compact_is_a_seed_stage_not_a_compactor_method() -> None:
    assert not hasattr(default(), "micro_compact")
    seed_engine = seed().engine
    assert callable(getattr(seed_engine, "micro_compact", None))


def test_an_invalid_history_that_would_restart_the_session_leaves_it_as_it_was() -> None:
    c = default()
    view = sdk_loop(c, 30)
    bad = [user("another task"), call("x"), user("no result for x")]
    with pytest.raises(InvalidHistory):
        c.prepare(bad, "another task")
    assert not [e for e in c.events if e.stage == "session_restart"]
    w = synthetic_session(31, seed=4)
    after = c.prepare([*view, w.turns[30].assistant, w.turns[30].results], w.request)
    assert after[-1] == w.turns[30].results
    assert not [e for e in c.events if e.stage == "session_restart"]
