"""A reader in another process than a session's writer: it reads a consistent snapshot and never
takes an append in progress for damage (``witness.settled``: the witness before the journal)."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

from store_helpers import append_turns, open_store, whole_turns

from context_compact.errors import CorruptJournal

SPAWN = multiprocessing.get_context("spawn")
READS = 60
SIZE = 1500  # each turn has a text stored by hash, as a tool result is
TURNS = 4000  # the writer's, one every PAUSE seconds: it outlasts the reads, and stops
PAUSE = 0.002


def test_a_reader_never_reports_corruption_for_an_append_in_progress(
    tmp_path: Path, durable_kind: str
) -> None:
    store = open_store(durable_kind, tmp_path)
    store.create_session({"id": "live"})
    store.close()
    ready = SPAWN.Event()
    writer = SPAWN.Process(
        target=append_turns,
        args=(durable_kind, str(tmp_path), "live", TURNS, None, SIZE, ready, PAUSE),
    )
    writer.start()
    false_alarms: list[str] = []
    seen: list[int] = []
    try:
        assert ready.wait(timeout=60)
        time.sleep(0.05)
        reader = open_store(durable_kind, tmp_path)
        for read in range(READS):
            if read % 10 == 0 and read:
                reader = open_store(durable_kind, tmp_path)
            try:
                seen.append(whole_turns(list(reader.records("live")), SIZE))
            except CorruptJournal as error:
                false_alarms.append(str(error))
            if read % 10 == 9:
                reader.close()
        assert writer.is_alive(), "the writer stopped: the reads raced nothing"
    finally:
        writer.kill()
        writer.join(timeout=30)
        writer.close()
    assert false_alarms == [], f"{len(false_alarms)} of {READS} reads: {false_alarms[0]}"
    assert seen == sorted(seen) and seen[-1] > seen[0], seen
