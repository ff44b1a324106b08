"""The session journal, the same in every store (MemoryStore, FileStore, SqliteStore)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from store_helpers import turn, whole_turns

from context_compact.store import SessionExists, Store


def test_a_record_appended_is_read_back_equal(store: Store) -> None:
    session = store.create_session({})
    record = {"kind": "observe", "tokens": 12_345, "ok": True, "none": None, "f": 0.5}
    store.append(session, [record])
    assert list(store.records(session)) == [record]


def test_records_come_back_as_after_a_json_round_trip(store: Store) -> None:
    session = store.create_session({})
    record: dict[Any, Any] = {"kind": "x", "pair": (1, 2), 3: "int key", "nested": {"t": ()}}
    store.append(session, [record])
    assert list(store.records(session)) == [json.loads(json.dumps(record))]


def test_records_of_every_kind_come_back_in_append_order(store: Store) -> None:
    session = store.create_session({})
    kinds = ["message", "edit", "event", "observe", "edit", "message", "summary", "event"]
    records = [{"kind": k, "i": i} for i, k in enumerate(kinds)]
    for record in records:
        if record["kind"] == "message":
            record.update(id=f"m{record['i']}", parent=None, message={"role": "user"})
    for batch in (records[:3], records[3:4], [], records[4:]):
        store.append(session, batch)
    assert list(store.records(session)) == records


def test_turns_with_large_tool_results_come_back_whole(store: Store) -> None:
    session = store.create_session({})
    for n in range(5):
        store.append(session, turn(n))
    assert whole_turns(list(store.records(session))) == 5


def test_sessions_do_not_see_each_others_records(store: Store) -> None:
    a, b = store.create_session({}), store.create_session({})
    store.append(a, [{"kind": "event", "s": "a"}])
    store.append(b, [{"kind": "event", "s": "b"}, {"kind": "event", "s": "b"}])
    assert [r["s"] for r in store.records(a)] == ["a"]
    assert [r["s"] for r in store.records(b)] == ["b", "b"]


def test_meta_is_what_was_given_plus_id_and_utc_creation_time(store: Store) -> None:
    given = {"engine": "default", "policy": {"limit": 1000, "ratio": 0.5}, "tags": ["a"]}
    session = store.create_session(given)
    meta = store.session_meta(session)
    assert meta is not None
    assert {k: v for k, v in meta.items() if k not in ("id", "created")} == given
    assert meta["id"] == session and len(session) == 12
    assert datetime.fromisoformat(meta["created"]).utcoffset() == UTC.utcoffset(None)


def test_a_session_id_given_in_meta_is_used(store: Store) -> None:
    assert store.create_session({"id": "my-session.1"}) == "my-session.1"
    meta = store.session_meta("my-session.1")
    assert meta is not None and meta["id"] == "my-session.1"


def test_creating_a_session_that_exists_is_refused(store: Store) -> None:
    store.create_session({"id": "s1", "v": 1})
    with pytest.raises(SessionExists, match="s1"):
        store.create_session({"id": "s1", "v": 2})
    assert (store.session_meta("s1") or {})["v"] == 1


@pytest.mark.parametrize("bad", ["", "../x", "a/b", ".hidden", "x" * 129, "caf\u00e9", 7])
def test_a_session_id_that_is_not_a_plain_name_is_refused(store: Store, bad: Any) -> None:
    with pytest.raises(ValueError, match="session id"):
        store.create_session({"id": bad})


def test_an_unknown_session_has_no_meta_and_no_records(store: Store) -> None:
    assert store.session_meta("nope") is None
    assert store.session_meta("../../etc/passwd") is None
    with pytest.raises(KeyError):
        store.records("nope")
    with pytest.raises(KeyError):
        store.append("nope", [{"kind": "event"}])


def test_sessions_are_listed_newest_first(store: Store) -> None:
    ids = [store.create_session({"n": n}) for n in range(4)]
    assert [m["id"] for m in store.list_sessions()] == ids[::-1]
    assert [m["n"] for m in store.list_sessions()] == [3, 2, 1, 0]


def test_a_batch_with_a_record_without_kind_is_refused_whole(store: Store) -> None:
    session = store.create_session({})
    with pytest.raises(ValueError, match="kind"):
        store.append(session, [{"kind": "event"}, {"no": "kind"}])
    assert list(store.records(session)) == []


def test_a_batch_holding_what_json_cannot_hold_is_refused_whole(store: Store) -> None:
    session = store.create_session({})
    with pytest.raises(TypeError):
        store.append(session, [{"kind": "event"}, {"kind": "event", "x": object()}])
    assert list(store.records(session)) == []


def test_records_appended_later_do_not_change_records_read_before(store: Store) -> None:
    session = store.create_session({})
    store.append(session, [{"kind": "event", "n": 1}])
    before = store.records(session)
    store.append(session, [{"kind": "event", "n": 2}])
    assert [r["n"] for r in before] == [1]


def test_a_record_changed_by_the_caller_after_append_stays_as_appended(store: Store) -> None:
    session = store.create_session({})
    record: dict[str, Any] = {"kind": "event", "paths": ["a"]}
    store.append(session, [record])
    record["paths"].append("b")
    assert list(store.records(session)) == [{"kind": "event", "paths": ["a"]}]


def test_lone_surrogates_survive_in_records_and_meta(store: Store) -> None:
    odd = "bad \ud800 byte \udfff" + "y" * 2000 + "\udc80"
    session = store.create_session({"title": "t\udcff"})
    record = {"kind": "message", "id": "i\ud800", "parent": None, "message": {"content": odd}}
    store.append(session, [record, {"kind": "event", "note": "\udc00"}])
    assert list(store.records(session)) == [record, {"kind": "event", "note": "\udc00"}]
    assert (store.session_meta(session) or {})["title"] == "t\udcff"


def test_a_durable_store_reopened_has_every_session_and_record(
    durable_kind: str, opened: Callable[[str], Store]
) -> None:
    first = opened(durable_kind)
    session = first.create_session({"engine": "x"})
    for n in range(3):
        first.append(session, turn(n))
    first.close()
    again = opened(durable_kind)
    assert whole_turns(list(again.records(session))) == 3
    assert [m["id"] for m in again.list_sessions()] == [session]
    again.append(session, turn(3))
    assert whole_turns(list(again.records(session))) == 4
