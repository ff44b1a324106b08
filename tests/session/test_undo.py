"""Undo (``session/undo.py``): the newest compaction taken back as a new record in the log."""

from __future__ import annotations

import json
from typing import Any

import pytest

from context_compact import Compactor, MemoryStore, Policy, check
from context_compact.errors import UndoRefused
from context_compact.session.records import BlockEdit, SummaryEdit, Undo, journal
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session

LIMIT = 12_500


def policy(**overrides: Any) -> Policy:
    return Policy.default(context_limit=LIMIT, summarize_ahead=False, **overrides)


def until(kind: type, op: str | None = None) -> tuple[list[list[Any]], list[Any], Any]:
    """Two runs of one session, step by step: the views, the caller's messages and the
    workload, up to the first call whose newest compaction is a ``kind`` edit (``op``)."""
    workload = synthetic_session(120, seed=1)
    store = MemoryStore("/memory")
    c = Compactor(policy(), store, BenchSummarizer(), session="s")
    messages: list[Any] = [{"role": "user", "content": workload.request}]
    for i, turn in enumerate(workload.turns):
        view = c.prepare(messages, workload.request)
        records = list(journal(store.records("s")))
        compactions = [
            r
            for r in records
            if isinstance(r, SummaryEdit) or (isinstance(r, BlockEdit) and r.op == "clear")
        ]
        newest = compactions[-1] if compactions else None
        if isinstance(newest, kind) and (op is None or getattr(newest, "op", None) == op):
            return [view], [*view, turn.assistant, turn.results], (c, store, workload, i)
        messages = [*view, turn.assistant, turn.results]
    raise AssertionError("the workload never made that compaction")


def replayed_without(store: MemoryStore, skip: int) -> list[Any]:
    """The view a session whose journal lacks record ``skip`` (and the undo) resumes to."""
    copy = MemoryStore("/memory")
    copy.files = dict(store.files)
    records = [r for i, r in enumerate(store.records("s")) if i != skip and r["kind"] != "undo"]
    meta = store.session_meta("s")
    assert meta is not None
    copy.create_session({**meta, "id": "t"})
    copy.append("t", records)
    return Compactor(policy(), copy, BenchSummarizer(), session="t").view()


@pytest.mark.parametrize(("kind", "op"), [(SummaryEdit, None), (BlockEdit, "clear")])
def test_undo_of_a_compaction_gives_the_view_as_if_it_had_not_happened(
    kind: type, op: str | None
) -> None:
    _, _, (c, store, _, _) = until(kind, op)
    before = c.view()
    view = c.undo()
    assert view != before and check(view) == []
    records = list(store.records("s"))
    undo = records[-2] if records[-1]["kind"] == "event" else records[-1]
    assert undo["kind"] == "undo"
    target = undo["record"]
    assert records[target]["kind"] == "edit"  # the undone edit stays in the log
    expected = replayed_without(store, target)
    assert json.dumps(view) == json.dumps(expected)
    # A resumed session replays the undo: the same view.
    resumed = Compactor(policy(), store, BenchSummarizer(), session="s")
    assert json.dumps(resumed.view()) == json.dumps(view)
    assert [e.stage for e in c.events][-1] == "undo_compaction"


def test_after_an_undo_the_session_goes_on_and_resumes_byte_for_byte() -> None:
    _, messages, (c, store, workload, i) = until(SummaryEdit)
    c.undo()
    messages = [*c.view(), *messages[-2:]]
    views = []
    for turn in workload.turns[i + 1 : i + 30]:
        view = c.prepare(messages, workload.request)
        assert check(view) == []
        views.append(json.dumps(view))
        messages = [*view, turn.assistant, turn.results]
    resumed = Compactor(policy(), store, BenchSummarizer(), session="s")
    assert json.dumps(resumed.view()) == views[-1]
    assert any(isinstance(r, Undo) for r in journal(store.records("s")))


def test_an_undo_that_would_overflow_the_window_is_refused_and_changes_nothing() -> None:
    _, _, (_c, store, _, _) = until(SummaryEdit)
    small = Compactor(
        Policy.default(context_limit=3_000, summarize_ahead=False, low_water=0.2),
        store,
        BenchSummarizer(),
        session="s",
    )
    before, length = small.view(), len(list(store.records("s")))
    with pytest.raises(UndoRefused, match="over the limit of 3,000; nothing was changed"):
        small.undo()
    assert small.view() == before and len(list(store.records("s"))) == length


def test_a_session_with_nothing_to_undo_says_so() -> None:
    c = Compactor(policy(), MemoryStore("/memory"), BenchSummarizer(), session="s")
    c.prepare([{"role": "user", "content": "hi"}], "hi")
    with pytest.raises(UndoRefused, match="no compaction left to undo"):
        c.undo()
