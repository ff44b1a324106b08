"""Retrying a call after any error we raise: the retry journals what the failed call did not,
a fenced or locked writer never returns a view it has not journaled, and a view handed out is
the caller's to edit. Each test resumes the session at the end: a session that cannot be
resumed, or resumes to another view, is data lost."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from store_helpers import DURABLE_KINDS, claim_session, open_store

from context_compact import Compactor, FileStore, MemoryStore, Policy
from context_compact.errors import SessionLocked, StoreUnavailable
from context_compact.store import Store
from context_compact.store.postgres import PostgresStore
from context_compact.testing.faulty import FaultyStore
from histories import call, results, user
from postgres_server import query

SPAWN = multiprocessing.get_context("spawn")
POLICY = Policy.default(context_limit=3_000)


def grow(history: list[Any], tag: str, size: int = 900) -> list[Any]:
    return [*history, call(tag), results((tag, f"out {tag} " + "y" * size))]


def assert_resumes_to(store: Store, session: str, view: list[Any]) -> None:
    resumed = Compactor(POLICY, store, session=session)
    assert resumed.view() == view
    logged = [r for r in store.records(session) if r["kind"] == "message"]
    assert [r["seq"] for r in logged] == list(range(len(logged)))  # no gap, nothing twice


@pytest.mark.parametrize("kind", ["files", "sqlite"])
def test_a_retry_after_another_process_let_the_session_go_journals_the_call(
    tmp_path: Path, kind: str
) -> None:
    store = open_store(kind, tmp_path)
    store.create_session({"id": "s"})
    ready, release = SPAWN.Event(), SPAWN.Event()
    child = SPAWN.Process(target=claim_session, args=(kind, str(tmp_path), "s", ready, release))
    child.start()
    try:
        assert ready.wait(timeout=30)
        compactor = Compactor(POLICY, store, session="s")
        history = grow([user("task")], "a")
        with pytest.raises(SessionLocked, match=f"process {child.pid}"):
            compactor.prepare(history, "task")
    finally:
        release.set()
        child.join(timeout=30)
    view = compactor.prepare(history, "task")  # the same call, as the error says
    view = compactor.prepare(grow(view, "b"), "task")
    assert_resumes_to(store, "s", view)
    store.close()


@pytest.mark.parametrize("kind", DURABLE_KINDS)
def test_ctrl_c_during_the_journal_write_then_going_on_leaves_a_session_that_resumes(
    tmp_path: Path, kind: str
) -> None:
    inner = open_store(kind, tmp_path)
    store = FaultyStore(inner, fail={"append"}, error=KeyboardInterrupt(), skip=1, times=1)
    compactor = Compactor(POLICY, store)
    view = compactor.prepare(grow([user("task")], "a"), "task")
    history = grow(view, "b", 4_000)  # large enough to be persisted: the call has an event
    with pytest.raises(KeyboardInterrupt):
        compactor.prepare(history, "task")
    # The interrupted call's events are gone with it: memory holds what the journal holds.
    assert compactor.session_id is not None
    journaled = [r["stage"] for r in inner.records(compactor.session_id) if r["kind"] == "event"]
    assert [e.stage for e in compactor.events] == journaled
    view = compactor.prepare(grow(history, "c"), "task")  # what `chat` does after Ctrl-C
    assert compactor.session_id is not None
    assert_resumes_to(inner, compactor.session_id, view)
    inner.close()


@pytest.mark.parametrize("kind", DURABLE_KINDS)
def test_a_call_whose_append_the_store_refused_changes_nothing_and_its_retry_is_journaled(
    tmp_path: Path, kind: str
) -> None:
    inner = open_store(kind, tmp_path)
    store = FaultyStore(inner, fail={"append"}, skip=1, times=2)
    compactor = Compactor(POLICY, store)
    view = compactor.prepare(grow([user("task")], "a"), "task")
    events = len(compactor.events)
    history = grow(view, "b", 4_000)
    for _ in range(2):
        with pytest.raises(StoreUnavailable, match="changed nothing and can be retried"):
            compactor.prepare(history, "task")
        assert len(compactor.events) == events  # the failed call's events are not kept
    view = compactor.prepare(history, "task")
    assert compactor.session_id is not None
    assert_resumes_to(inner, compactor.session_id, view)
    inner.close()


def test_a_fenced_postgres_worker_retrying_never_returns_a_view_it_did_not_journal(
    worker: Callable[..., PostgresStore], schema: str
) -> None:
    one, two = worker("one"), worker("two")
    first = Compactor(POLICY, one)
    view = first.prepare(grow([user("task")], "a"), "task")
    sid = str(first.session_id)
    # The first worker stops answering past its lease; the second takes the session over.
    query(schema, "UPDATE writers SET host = 'gone-host', heartbeat = heartbeat - 3600")
    second = Compactor(POLICY, two, session=sid)
    theirs = second.prepare(grow(second.view(), "theirs"), "task")
    mine = grow(view, "mine")
    with pytest.raises(SessionLocked, match="lost its lease"):
        first.prepare(mine, "task")
    with pytest.raises(SessionLocked, match="continued by another writer"):
        first.prepare(mine, "task")  # the retry: never a view without the other's turn
    texts = str([r.get("message") for r in two.records(sid)])
    assert "out theirs" in texts and "out mine" not in texts
    assert_resumes_to(two, sid, theirs)


@pytest.mark.parametrize("make", [MemoryStore, lambda: None])
def test_editing_the_returned_view_in_place_changes_neither_the_engine_nor_a_resume(
    tmp_path: Path, make: Callable[[], Store | None]
) -> None:
    store = make() or FileStore(tmp_path)
    compactor = Compactor(POLICY, store)
    view = compactor.prepare(grow([user("task")], "a"), "task")
    # The prompt-caching pattern: mark the last block, send, then move the mark.
    view[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    view[0]["content"] = "edited in place"
    view = compactor.prepare(grow(view, "b"), "task")
    assert "cache_control" not in str(view[:-2]) and view[0]["content"] == "task"
    assert compactor.view() == view
    assert compactor.session_id is not None
    assert_resumes_to(store, compactor.session_id, view)


def test_a_second_compactor_cannot_open_a_session_while_the_first_is_inside_a_call() -> None:
    store = MemoryStore()
    inside, release = threading.Event(), threading.Event()

    def slow_summary(messages: list[Any], **_: Any) -> str:
        inside.set()
        release.wait(timeout=30)
        return "summary"

    first = Compactor(Policy.default(context_limit=3_000), store, slow_summary)
    view = first.prepare(grow([user("task")], "a"), "task")
    sid = str(first.session_id)
    history = view
    for tag in "bcdefgh":
        history = grow(history, tag)
    done: list[Any] = []
    worker = threading.Thread(target=lambda: done.append(first.compact_history(history, "task")))
    worker.start()
    try:
        assert inside.wait(timeout=30)
        with pytest.raises(SessionLocked, match="being written by another Compactor"):
            Compactor(Policy.default(context_limit=3_000), store, session=sid)
    finally:
        release.set()
        worker.join(timeout=30)
    assert_resumes_to(store, sid, done[0])
