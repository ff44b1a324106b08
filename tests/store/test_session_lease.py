"""One writer per session across processes: a clear error for the second, never interleaved
history, and a writer killed with SIGKILL blocks nobody (spawned processes, nothing shared)."""

from __future__ import annotations

import multiprocessing
import multiprocessing.synchronize
from multiprocessing.process import BaseProcess
from pathlib import Path

import pytest
from store_helpers import DURABLE_KINDS, hold_session, open_store, turn, whole_turns

from context_compact.store import SessionLocked

SPAWN = multiprocessing.get_context("spawn")


def start_holder(
    kind: str, where: Path, session: str
) -> tuple[BaseProcess, multiprocessing.synchronize.Event]:
    ready, release = SPAWN.Event(), SPAWN.Event()
    child = SPAWN.Process(target=hold_session, args=(kind, str(where), session, ready, release))
    child.start()
    assert ready.wait(timeout=30), "the holder never wrote its turn"
    return child, release


@pytest.mark.parametrize("kind", DURABLE_KINDS)
def test_a_session_another_live_process_writes_is_refused_with_its_pid(
    tmp_path: Path, kind: str
) -> None:
    store = open_store(kind, tmp_path)
    store.create_session({"id": "s"})
    store.create_session({"id": "other"})
    child, release = start_holder(kind, tmp_path, "s")
    try:
        with pytest.raises(SessionLocked, match=rf"process {child.pid} on "):
            store.append("s", turn(1))
        with pytest.raises(SessionLocked, match="being written by"):
            store.claim("s")
        store.append("other", turn(0))  # another session of the same store is free
        assert whole_turns(list(store.records("s"))) == 1  # nothing of ours got in
    finally:
        release.set()
        child.join(timeout=30)
        store.close()


@pytest.mark.parametrize("kind", DURABLE_KINDS)
def test_a_writer_killed_with_sigkill_does_not_block_the_session(tmp_path: Path, kind: str) -> None:
    store = open_store(kind, tmp_path)
    store.create_session({"id": "s"})
    store.close()
    child, _ = start_holder(kind, tmp_path, "s")
    child.kill()
    child.join(timeout=30)
    store = open_store(kind, tmp_path)
    try:
        done = whole_turns(list(store.records("s")))
        store.append("s", turn(done))
        assert whole_turns(list(store.records("s"))) == 2
    finally:
        store.close()


@pytest.mark.parametrize("kind", DURABLE_KINDS)
def test_a_session_written_by_another_process_since_it_was_read_is_refused(
    tmp_path: Path, kind: str
) -> None:
    store = open_store(kind, tmp_path)
    store.create_session({"id": "s"})
    assert list(store.records("s")) == []
    child, release = start_holder(kind, tmp_path, "s")
    release.set()
    child.join(timeout=30)
    try:
        # The other writer is gone, but this store read the journal before it wrote.
        with pytest.raises(SessionLocked, match="since this one read it"):
            store.append("s", turn(0))
        assert whole_turns(list(store.records("s"))) == 1
        store.append("s", turn(1))  # after reading again, it goes on from there
        assert whole_turns(list(store.records("s"))) == 2
    finally:
        store.close()
