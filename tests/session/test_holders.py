"""Issue 18: two live compactors of one process on one session and store object cannot
interleave two histories in its journal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from context_compact import Compactor, FileStore, MemoryStore, Policy, SqliteStore
from context_compact.store.lease import SessionLocked
from histories import call, results, user


def open_store(kind: str, tmp_path: Path) -> Any:
    if kind == "files":
        return FileStore(tmp_path)
    if kind == "sqlite":
        return SqliteStore(tmp_path / "s.db")
    return MemoryStore()


def step(history: list[Any], tag: str) -> list[Any]:
    return [*history, call(tag), results((tag, f"out {tag}"))]


@pytest.mark.parametrize("kind", ["memory", "files", "sqlite"])
def test_a_second_compactor_writing_a_session_the_first_wrote_since_is_refused(
    tmp_path: Path, kind: str
) -> None:
    store = open_store(kind, tmp_path)
    first = Compactor(Policy.default(), store)
    mine = first.prepare([user("first")], "first")
    sid = first.session_id
    second = Compactor(Policy.default(), store, session=sid)
    theirs = second.view()
    mine = first.prepare(step(mine, "a0"), "first")
    with pytest.raises(SessionLocked, match=f"session '{sid}'.*another Compactor of this process"):
        second.prepare(step(theirs, "b0"), "second")
    # The journal holds one history, and a new compactor resumes it.
    mine = first.prepare(step(mine, "a1"), "first")
    resumed = Compactor(Policy.default(), store, session=sid)
    assert resumed.view() == mine
    logged = [r["message"] for r in store.records(sid) if r["kind"] == "message"]
    assert logged == mine


def test_a_compactor_that_resumes_after_the_other_wrote_takes_the_session_over() -> None:
    store = MemoryStore()
    first = Compactor(Policy.default(), store)
    first.prepare([user("t")], "t")
    second = Compactor(Policy.default(), store, session=first.session_id)
    view = second.prepare(step(second.view(), "b0"), "t")
    assert [m["role"] for m in view] == ["user", "assistant", "user"]
    with pytest.raises(SessionLocked):
        first.prepare(step([user("t")], "a0"), "t")


def test_a_store_object_that_is_gone_takes_its_sessions_generations_with_it() -> None:
    import gc
    import weakref

    from context_compact.session import holders

    store = MemoryStore()
    engine = object()
    with holders.writing(store, "s", engine, holders.opened(store, "s", engine)):
        pass
    assert holders.opened(store, "s", engine) == 1
    gone = weakref.ref(store)
    del store
    gc.collect()
    assert gone() is None  # the holders kept no strong reference to the store
    other = MemoryStore()
    assert holders.opened(other, "s", engine) == 0  # a new store object starts afresh
