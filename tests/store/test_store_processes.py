"""Several processes at once, and processes killed mid-append (spawned, so nothing is shared)."""

from __future__ import annotations

import contextlib
import multiprocessing
import random
import sqlite3
import time
from pathlib import Path

import pytest
from store_helpers import append_turns, open_store, turn, whole_turns

from context_compact.store import SqliteStore

SPAWN = multiprocessing.get_context("spawn")
KILLS = 10
SIZE = 1500  # a turn's tool result: still a blob, small enough that fast writers stay small


def test_two_processes_append_to_two_sessions_of_one_database_at_once(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "store.db")
    sessions = [store.create_session({"writer": n}) for n in range(2)]
    store.close()
    start = SPAWN.Barrier(3)
    writers = [
        SPAWN.Process(target=append_turns, args=("sqlite", str(tmp_path), s, 200, start))
        for s in sessions
    ]
    for writer in writers:
        writer.start()
    start.wait(timeout=30)
    for writer in writers:
        writer.join(timeout=60)
        assert writer.exitcode == 0
        writer.close()
    store = SqliteStore(tmp_path / "store.db")
    try:
        assert [whole_turns(list(store.records(s))) for s in sessions] == [200, 200]
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["sqlite", "files"])
def test_a_process_killed_at_a_random_moment_leaves_every_batch_whole(
    tmp_path: Path, kind: str
) -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    places = [tmp_path / f"run{n}" for n in range(KILLS)]
    for place in places:
        place.mkdir()
        store = open_store(kind, place)
        store.create_session({"id": "s"})
        store.close()
    ready = [SPAWN.Event() for _ in places]
    children = [
        SPAWN.Process(target=append_turns, args=(kind, str(place), "s", -1, None, SIZE, event))
        for place, event in zip(places, ready, strict=True)
    ]
    for child in children:
        child.start()
    for event in ready:
        assert event.wait(timeout=30)
    # Every child is appending now; each is killed after a random further while (0-300 ms).
    for child in rng.sample(children, len(children)):
        time.sleep(rng.uniform(0, 0.03))
        child.kill()
    turns = []
    for child, place in zip(children, places, strict=True):
        child.join(timeout=30)
        child.close()
        if kind == "sqlite":
            with contextlib.closing(sqlite3.connect(place / "store.db")) as raw:
                assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        store = open_store(kind, place)
        try:
            done = whole_turns(list(store.records("s")), SIZE)
            store.append("s", turn(done, SIZE))  # the session goes on where it stopped
            assert whole_turns(list(store.records("s")), SIZE) == done + 1
            turns.append(done)
        finally:
            store.close()
    assert any(turns), f"no child appended anything before its kill (seed {seed})"
