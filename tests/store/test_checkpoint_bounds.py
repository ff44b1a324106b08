"""What a resume reads is bounded by the view, not by the session's length.

A checkpoint carries no tool_use id that left the view; the ids of the whole conversation
are read from the caller's own full history the first time one is passed, so a caller that
passes its full history after a resume still may not reuse an id a summary took away.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from context_compact import Compactor, InvalidHistory, Policy
from context_compact.session import checkpoint
from context_compact.store import MemoryStore
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session
from histories import call, results

TURNS = 36


def played(store: MemoryStore) -> list[Any]:
    """The loop of ``test_checkpoints``; the caller's full history it built."""
    w = synthetic_session(TURNS, seed=5)
    c = Compactor(Policy.default(context_limit=5000), store, BenchSummarizer(), session="s")
    history: list[Any] = [{"role": "user", "content": w.request}]
    view = c.prepare(list(history), w.request)
    for t in w.turns:
        history += [t.assistant, t.results]
        view.extend([t.assistant, t.results])
        view = c.prepare(view, w.request)
    return history


def resumed(store: MemoryStore) -> Compactor:
    return Compactor(Policy.default(context_limit=5000), store, BenchSummarizer(), session="s")


def use_ids(messages: list[Any]) -> list[str]:
    return [
        b["id"]
        for m in messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_use"
    ]


def test_a_checkpoint_holds_no_tool_use_id_of_the_messages_a_summary_took_away(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(checkpoint, "EVERY", 8)
    store = MemoryStore("/m")
    history = played(store)
    c = resumed(store)
    engine: Any = c.engine
    assert engine.session.journal.checkpointed > 0
    in_view = engine.session.state.shown.use_ids
    gone = [i for i in use_ids(history) if i not in in_view]
    assert len(gone) > TURNS // 2  # summaries took most of the session out of the view
    raw = json.dumps(checkpoint.capture(engine.session.state, 0, 0))
    assert [i for i in gone if f'"{i}"' in raw] == []


def test_a_full_history_after_a_resume_may_not_reuse_an_id_a_summary_took_away(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(checkpoint, "EVERY", 8)
    store = MemoryStore("/m")
    history = played(store)
    c = resumed(store)
    engine: Any = c.engine
    assert engine.session.journal.checkpointed > 0
    first = use_ids(history)[0]
    assert first not in engine.session.state.shown.use_ids
    request = history[0]["content"]
    with pytest.raises(InvalidHistory) as info:
        c.prepare([*history, call(first), results((first, "again"))], request)
    assert (info.value.rule, info.value.index) == ("duplicate_id", len(history))
    out = c.prepare([*history, call("fresh"), results(("fresh", "ok"))], request)
    assert out[-1] == results(("fresh", "ok"))
    # Once read, the ids are kept as messages are logged: the next full history is checked
    # against the new one too.
    history += [call("fresh"), results(("fresh", "ok"))]
    with pytest.raises(InvalidHistory):
        c.prepare([*history, call("fresh"), results(("fresh", "twice"))], request)


def test_a_checkpoint_of_the_format_before_restores_the_same_view(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(checkpoint, "EVERY", 8)
    store = MemoryStore("/m")
    played(store)
    engine: Any = resumed(store).engine
    raw = checkpoint.capture(engine.session.state, 7, 0)
    old = {**raw["state"], "log_use_ids": ["toolu_x"]}
    older = {**raw, "version": 1, "state": old, "digest": checkpoint._digest(old)}
    state, _ = checkpoint.restore(json.loads(json.dumps(older)), engine.session.state.counter, 7)
    assert json.dumps(state.view) == json.dumps(engine.session.state.view)
    with pytest.raises(checkpoint.BadRecord):
        checkpoint.restore({**older, "version": 3}, engine.session.state.counter, 7)
