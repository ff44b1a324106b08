"""The view goes out as private copies: a caller that edits what ``prepare`` returned, in
place, changes neither the session's log nor what a resumed session sends."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from context_compact import Compactor, MemoryStore, Policy
from context_compact.errors import StoreUnavailable
from context_compact.session.records import MessageRecord, journal
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.faulty import FaultyStore
from context_compact.testing.workload import synthetic_session


def _history(turns: int) -> list[dict[str, Any]]:
    workload = synthetic_session(turns, seed=11)
    out: list[dict[str, Any]] = [{"role": "user", "content": workload.request}]
    for turn in workload.turns:
        out += [turn.assistant, turn.results]
    return out


def _vandalize(view: list[dict[str, Any]]) -> None:
    for message in view:
        content = message["content"]
        if isinstance(content, list):
            for block in content:
                block["text"] = "edited by the caller"
                block["content"] = "edited by the caller"
            content.append({"type": "text", "text": "appended by the caller"})
        else:
            message["content"] = "edited by the caller"


@pytest.mark.parametrize("window", [6_000, 400_000])  # a cold start summarized, and whole
def test_editing_the_returned_view_in_place_leaves_the_log_and_a_resumed_view_alone(
    window: int,
) -> None:
    history = _history(60)
    original = copy.deepcopy(history)
    store = MemoryStore()
    policy = Policy.default(context_limit=window)
    live = Compactor(policy, store, BenchSummarizer(), session="s")
    view = live.prepare(history, "fix it")
    sent = copy.deepcopy(view)
    _vandalize(view)
    assert history == original  # the caller's own list was never ours to edit
    logged = [r.message for r in journal(store.records("s"), "s") if isinstance(r, MessageRecord)]
    assert logged == original
    # The live session's log in memory too: what later clearings and summaries copy from.
    assert all(m == original[seq] for seq, m in live.engine.session.state.msgs.items())
    del live
    resumed = Compactor(policy, store, BenchSummarizer(), session="s")
    assert resumed.engine.session.view() == sent


def _logged(store: Any, session: str = "s") -> list[Any]:
    return [
        r.message for r in journal(store.records(session), session) if isinstance(r, MessageRecord)
    ]


@pytest.mark.parametrize("window", [6_000, 400_000])
def test_editing_the_history_passed_in_place_after_the_call_leaves_the_log_alone(
    window: int,
) -> None:
    history = _history(60)
    original = copy.deepcopy(history)
    store = MemoryStore()
    live = Compactor(Policy.default(context_limit=window), store, BenchSummarizer(), session="s")
    view = live.prepare(history, "fix it")
    sent = copy.deepcopy(view)
    _vandalize(history)
    assert view == sent  # the view holds no object of the caller's either
    assert _logged(store) == original
    assert all(m == original[seq] for seq, m in live.engine.session.state.msgs.items())
    assert live.prepare(view, "fix it") == sent


def test_editing_messages_logged_by_record_leaves_the_next_view_alone() -> None:
    history = _history(20)
    live = Compactor(Policy.default(context_limit=400_000), MemoryStore(), BenchSummarizer())
    first = live.prepare(history[:1], "fix it")
    added = copy.deepcopy(history[1:])
    live.record(first + history[1:])
    _vandalize(history[1:])
    assert live.prepare(first + added, "fix it")[1:] == added


def test_a_refused_append_keeps_copies_of_the_messages_not_the_callers_objects() -> None:
    history = _history(40)
    original = copy.deepcopy(history)
    inner = MemoryStore()
    store = FaultyStore(inner, fail={"append"})
    live = Compactor(Policy.default(context_limit=6_000), store, BenchSummarizer(), session="s")
    with pytest.raises(StoreUnavailable):
        live.prepare(history, "fix it")
    _vandalize(history)
    for message in history:  # so that no JSON made during the call stands in for it
        message["name"] = "edited by the caller"
    store.heal()
    live.prepare(original, "fix it")
    assert _logged(inner)[: len(original)] == original


def test_a_call_stopped_by_ctrl_c_leaves_copies_in_the_log_not_the_callers_objects() -> None:
    history = _history(40)
    original = copy.deepcopy(history)

    def interrupted(messages: list[Any]) -> str:
        raise KeyboardInterrupt

    store = MemoryStore()
    live = Compactor(Policy.default(context_limit=6_000), store, interrupted, session="s")
    with pytest.raises(KeyboardInterrupt):
        live.prepare(history, "fix it")
    _vandalize(history)
    assert all(m == original[seq] for seq, m in live.engine.session.state.msgs.items())
    assert _logged(store) == original


def test_a_result_persisted_in_the_call_that_logs_it_keeps_no_part_of_the_callers_block() -> None:
    big = "line of a long tool output\n" * 2_000
    cache = {"type": "ephemeral"}
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "read it"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {"p": "a"}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": big, "cache_control": cache}
            ],
        },
    ]
    live = Compactor(Policy.default(context_limit=20_000), MemoryStore(), BenchSummarizer())
    view = live.prepare(history, "read it")
    assert "persist_new_results" in {e.stage for e in live.events}
    sent = copy.deepcopy(view)
    cache["type"] = "edited by the caller"
    assert live.prepare(view, "read it") == sent
    # What a later edit of that message renders from (a clearing, a resume's replay).
    shown_block = live.engine.session.state.replaced.blocks[(2, 0)]
    assert shown_block["cache_control"] == {"type": "ephemeral"}
