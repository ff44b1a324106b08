"""Summaries made ahead of need (``session/ahead.py``): same views, nothing lost, no wait."""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

from context_compact import Compactor, MemoryStore, Policy, check, markers
from context_compact.history.inspect import timeline, timing_line
from context_compact.session.records import (
    AheadMark,
    SummaryEdit,
    Undo,
    as_json,
    journal,
    read,
)
from context_compact.summary import SummaryRequest
from context_compact.testing.workload import synthetic_session

LIMIT = 12_500
STEPS = 70


def digest(messages: list[Any]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:16]


class Scripted:
    """A model-like summarizer whose text is a function of the messages it replaces."""

    def __init__(self) -> None:
        self.calls = 0

    def summarize(self, ask: SummaryRequest) -> str:
        self.calls += 1
        return f"## Next step\nsummary of {len(ask.messages)} messages {digest(ask.messages)}"


def play(each_call: bool) -> tuple[list[str], MemoryStore, str, list[Any]]:
    """The views of one session; ``each_call``: a fresh process resumes before every call
    (whatever was in flight is gone with the one before)."""
    store = MemoryStore("/memory")
    policy = Policy.default(context_limit=LIMIT)
    workload = synthetic_session(STEPS, seed=3)
    # One session id for both runs: the index's path (in the summary) names it.
    c = Compactor(policy, store, Scripted(), session="s")
    messages: list[Any] = [{"role": "user", "content": workload.request}]
    views, events = [], []
    for turn in workload.turns:
        if each_call:
            c = Compactor(policy, store, Scripted(), session="s")
        before = len(c.events)
        view = c.prepare(messages, workload.request)
        events += c.events[before:]
        assert check(view) == []
        views.append(json.dumps(view))
        messages = [*view, turn.assistant, turn.results]
    assert c.session_id is not None
    return views, store, c.session_id, events


def test_a_summary_made_ahead_gives_the_views_of_one_made_at_the_trigger() -> None:
    ahead, store, sid, events = play(each_call=False)
    inline, _, _, inline_events = play(each_call=True)
    assert ahead == inline
    records = list(journal(store.records(sid)))
    assert any(isinstance(r, AheadMark) for r in records)
    summaries = [e for e in events if e.stage == "summarize"]
    assert summaries and all(e.timing is not None for e in summaries)
    # Made ahead in the one process (asked for in an earlier call); at the trigger in the
    # process that starts before every call.
    assert any(e.timing and e.timing["ahead"] for e in summaries)
    later = [e for e in inline_events if e.stage == "summarize"]
    assert later and not any(e.timing and e.timing["ahead"] for e in later)


def as_cleared(messages: list[Any]) -> list[Any]:
    """``messages`` as the trigger's clearing leaves them for its summary: each result still
    in full (every result here is large enough to clear) a note of its size."""
    out = []
    for m in messages:
        if m["role"] == "user" and isinstance(m["content"], list):
            m = {
                **m,
                "content": [
                    {**b, "content": markers.result_cleared_with_summary(len(b["content"]))}
                    if b.get("type") == "tool_result"
                    and not b["content"].startswith("[Tool result cleared from context: ")
                    else b
                    for b in m["content"]
                ],
            }
        out.append(m)
    return out


def test_a_summary_made_ahead_is_of_exactly_the_messages_it_replaces() -> None:
    # The text made ahead is of the range fixed ahead (a head of the archive), as the model
    # saw it but for the results the trigger's clearing takes (shown cleared, as to a summary
    # made at the trigger); what the trigger's cut takes after it is named and read off
    # without a model.
    _, store, sid, events = play(each_call=False)
    edits = [r for r in journal(store.records(sid)) if isinstance(r, SummaryEdit)]
    assert edits and any(e.timing and e.timing["ahead"] for e in events)
    for edit in edits:
        archived = [json.loads(line) for line in store.read_text(edit.archive).splitlines()]
        assert len(archived) == edit.cut - edit.start
        assert edit.text is not None
        heads = [
            n for n in range(1, len(archived) + 1) if digest(as_cleared(archived[:n])) in edit.text
        ]
        assert len(heads) == 1, edit.text
        if heads[0] < len(archived):
            since = markers.SUMMARY_SINCE.format(first=edit.start + heads[0], last=edit.cut - 1)
            assert since in edit.text


def test_inspect_says_when_each_summary_was_asked_for_ready_and_waited_for() -> None:
    _, store, sid, _ = play(each_call=False)
    summaries = [e for e in timeline(store, sid).events if e.stage == "summarize"]
    assert summaries and all(e.timing is not None for e in summaries)
    for e in summaries:
        assert e.timing is not None and e.timing["ready"] >= e.timing["started"]
        line = timing_line(e.timing)
        assert line is not None and "ready" in line and "the agent waited" in line
        how = "asked for ahead" if e.timing["ahead"] else "asked for at the trigger"
        assert how in line
    assert any(e.timing and e.timing["ahead"] for e in summaries)


def test_a_summary_in_flight_when_the_process_ends_is_asked_again_and_loses_nothing() -> None:
    release = threading.Event()

    def stuck(messages: list[Any]) -> str:
        release.wait(5)  # in flight until the test ends
        return "never used"

    store = MemoryStore("/memory")
    policy = Policy.default(context_limit=LIMIT)
    workload = synthetic_session(STEPS, seed=3)
    c = Compactor(policy, store, stuck)
    messages: list[Any] = [{"role": "user", "content": workload.request}]
    turns = iter(workload.turns)
    for turn in turns:
        view = c.prepare(messages, workload.request)
        messages = [*view, turn.assistant, turn.results]
        if c.engine.session.state.ahead is not None:  # type: ignore[attr-defined]
            break
    sid = c.session_id
    assert sid is not None
    kinds = [r.kind for r in journal(store.records(sid))]
    assert "ahead" in kinds and not any(
        isinstance(r, SummaryEdit) for r in journal(store.records(sid))
    )
    resumed = Compactor(policy, store, Scripted(), session=sid)
    for turn in turns:
        view = resumed.prepare(messages, workload.request)
        assert check(view) == []
        messages = [*view, turn.assistant, turn.results]
    release.set()
    texts = [r.text for r in journal(store.records(sid)) if isinstance(r, SummaryEdit)]
    assert texts and all(t is not None and "never used" not in t for t in texts)


def test_summaries_are_made_ahead_by_default_with_a_model_summarizer_only() -> None:
    class Local(Scripted):
        model_calls = False  # a fast summarizer says so

    for policy, summarizer, made_ahead in [
        (Policy.default(context_limit=LIMIT), Scripted(), True),
        (Policy.default(context_limit=LIMIT, summarize_ahead=True), Scripted(), True),
        (Policy.default(context_limit=LIMIT, summarize_ahead=False), Scripted(), False),
        (Policy.default(context_limit=LIMIT), None, False),
        (Policy.default(context_limit=LIMIT, summarize_ahead=True), None, False),
        (Policy.default(context_limit=LIMIT), Local(), False),
    ]:
        c = Compactor(policy, MemoryStore("/memory"), summarizer)
        workload = synthetic_session(40, seed=3)
        messages: list[Any] = [{"role": "user", "content": workload.request}]
        for turn in workload.turns:
            messages = [*c.prepare(messages, workload.request), turn.assistant, turn.results]
        assert c.session_id is not None
        records = list(journal(c.store.records(c.session_id)))
        assert any(isinstance(r, SummaryEdit) for r in records)
        assert any(isinstance(r, AheadMark) for r in records) is made_ahead, (policy, summarizer)


def test_a_summary_is_asked_for_ahead_only_when_the_coming_trigger_will_summarize() -> None:
    # The trigger clears first and summarizes only when the clearing alone buys too few
    # turns: a summary asked for ahead of a trigger that only clears is a wasted call.
    store = MemoryStore("/memory")
    summarizer = Scripted()
    c = Compactor(Policy.default(context_limit=LIMIT), store, summarizer)
    workload = synthetic_session(150, seed=1)
    messages: list[Any] = [{"role": "user", "content": workload.request}]
    for turn in workload.turns:
        messages = [*c.prepare(messages, workload.request), turn.assistant, turn.results]
    summaries = [e for e in c.events if e.stage == "summarize"]
    clearings = [e for e in c.events if e.stage == "clear_old_results"]
    assert len(clearings) > len(summaries) > 3
    made_ahead = [e for e in summaries if e.timing and e.timing["ahead"]]
    assert len(made_ahead) >= len(summaries) * 2 // 3
    # A prediction can miss (the clearing sufficed after all): a call in vain, not a summary.
    assert summarizer.calls <= len(summaries) * 3 // 2


def test_ahead_marks_and_undos_read_back_to_the_same_bytes() -> None:
    for record in (AheadMark(3, 9), Undo(12)):
        stored = as_json(record)
        assert read(stored) == record
        assert as_json(read(json.loads(json.dumps(stored)))) == stored
