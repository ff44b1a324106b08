"""The journal's typed records: one reader, and the stored layout unchanged by it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_long_turn import run_loop

from context_compact import Compactor, MemoryStore, Policy
from context_compact.errors import CorruptStore
from context_compact.session import checkpoint, records
from context_compact.session.records import (
    BadRecord,
    BlockEdit,
    MessageRecord,
    SummaryEdit,
    Unknown,
    as_json,
    journal,
    read,
)
from context_compact.testing.fakes import BenchSummarizer


def a_long_session(mode: str = "start") -> tuple[MemoryStore, str]:
    store = MemoryStore()
    policy = Policy.default(context_limit=8_000, summarize_ahead=False)  # clearings too
    compactor = Compactor(policy, store, BenchSummarizer())
    run_loop(compactor, mode, 80, 2, 1_500, 8_000)
    assert compactor.session_id is not None
    return store, compactor.session_id


@pytest.mark.parametrize("mode", ["start", "off"])
def test_every_record_a_session_writes_reads_back_to_the_same_bytes(mode: str) -> None:
    store, sid = a_long_session(mode)
    raw = list(store.records(sid))
    typed = list(journal(raw))
    kinds = {type(r).__name__ for r in typed}
    # The session exercised every kind of edit, so the check covers each layout.
    assert {"MessageRecord", "BlockEdit", "SummaryEdit", "EventRecord"} <= kinds
    # Checkpoints are read as records of a kind that changes nothing (checkpoint.py); the
    # resume reads them on its own. Every other record is of a kind this version knows.
    assert not any(isinstance(r, Unknown) and r.kind != checkpoint.KIND for r in typed)
    for stored, record in zip(raw, typed, strict=True):
        assert json.dumps(as_json(record)) == json.dumps(stored)


def test_a_resumed_session_sends_the_view_the_typed_journal_describes() -> None:
    store, sid = a_long_session()
    policy = Policy.default(context_limit=8_000, summarize_ahead=False)
    resumed = Compactor(policy, store, BenchSummarizer(), session=sid)
    summaries = [r for r in journal(store.records(sid)) if isinstance(r, SummaryEdit)]
    view = resumed.view()
    assert summaries and view[1] == summaries[-1].message


def test_a_record_of_an_unknown_kind_is_kept_as_stored_and_changes_nothing() -> None:
    raw = {"kind": "annotation", "by": "a later version", "text": "hello"}
    record = read(raw)
    assert isinstance(record, Unknown) and record.kind == "annotation"
    assert as_json(record) == raw


def test_an_edit_of_an_unknown_op_is_refused_with_its_place() -> None:
    with pytest.raises(BadRecord, match=r"session s1, record 3: unknown edit 'squash'"):
        list(journal([{"kind": "restart"}] * 3 + [{"kind": "edit", "op": "squash"}], "session s1"))


@pytest.mark.parametrize(
    "raw",
    [
        {"kind": "message", "seq": "3", "id": "a", "parent": "b", "message": {}},
        {"kind": "message", "id": "a"},
        {"kind": "edit", "op": "clear", "blocks": [[1, 2, "p"]]},
        {"kind": "edit", "op": "summarize", "start": 0},
        {"kind": "overhead", "tokens": True},
    ],
)
def test_a_malformed_record_is_a_corrupt_store_named_in_one_line(raw: dict[str, Any]) -> None:
    with pytest.raises(CorruptStore) as caught:
        read(raw, "session s1, record 7")
    text = str(caught.value)
    assert "\n" not in text and "session s1, record 7" in text


blocks = st.lists(
    st.builds(
        records.BlockCopy,
        st.integers(0, 10**6),
        st.integers(0, 50),
        st.text(min_size=1, max_size=20),
        st.text(max_size=40),
    ),
    min_size=1,
    max_size=5,
)


@given(st.sampled_from(["persist", "clear"]), blocks)
def test_block_edits_round_trip_through_the_stored_layout(op: str, copies: list[Any]) -> None:
    edit = BlockEdit(op, tuple(copies))  # type: ignore[arg-type]
    stored = json.loads(json.dumps(as_json(edit)))
    assert read(stored) == edit
    assert edit.paths == tuple(dict.fromkeys(c.path for c in copies))


@given(st.integers(0, 10**9), st.text(max_size=12), st.text(max_size=12))
def test_message_records_round_trip_through_the_stored_layout(
    seq: int, rid: str, parent: str
) -> None:
    record = MessageRecord(seq, rid, parent, {"role": "user", "content": "hi"})
    assert read(json.loads(json.dumps(as_json(record)))) == record
