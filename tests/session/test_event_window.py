"""``Compactor.events`` under the default engine keeps a bounded window in memory and reads
older events back from the session journal: every event is still there, in order, equal to
the one emitted (also after a resume, where the session's earlier events come first)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from context_compact import Compactor, FileStore, MemoryStore, Policy
from context_compact import events as event_module
from context_compact.events import CompactionEvent
from context_compact.store import SqliteStore
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session

WINDOW = 4


def store_of(kind: str, root: Path) -> Any:
    return FileStore(root) if kind == "file" else SqliteStore(root / "s.db")


def drive(compactor: Compactor, turns: int, start: int = 0) -> list[CompactionEvent]:
    emitted: list[CompactionEvent] = []
    compactor.subscribe(emitted.append)
    w = synthetic_session(start + turns, seed=5)
    view = compactor.view() if start else [{"role": "user", "content": w.request}]
    for turn in w.turns[start:]:
        view = compactor.prepare(view, w.request)
        view += [turn.assistant, turn.results]
    return emitted


@pytest.mark.parametrize("kind", ["file", "sqlite"])
def test_a_long_session_keeps_few_events_in_memory_and_yields_them_all(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(event_module, "EVENT_WINDOW", WINDOW)
    compactor = Compactor(
        Policy.default(context_limit=3_000), store_of(kind, tmp_path), BenchSummarizer()
    )
    emitted = drive(compactor, 60)
    events = compactor.events
    assert len(emitted) > 6 * WINDOW  # enough for the window to have moved
    assert events.in_memory <= 2 * WINDOW
    assert len(events) == len(emitted)
    assert list(events) == emitted and events == emitted
    assert events[0] == emitted[0] and events[-1] == emitted[-1]
    assert events[3:9] == emitted[3:9]
    assert any(e.score for e in events[: len(events) - events.in_memory])  # summaries' scores


def test_a_resumed_session_lists_the_sessions_events_its_earlier_ones_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(event_module, "EVENT_WINDOW", WINDOW)
    policy = Policy.default(context_limit=3_000)
    first = Compactor(policy, FileStore(tmp_path), BenchSummarizer())
    before = drive(first, 30)
    sid = first.session_id
    assert sid is not None and len(before) > 2 * WINDOW
    del first
    second = Compactor(policy, FileStore(tmp_path), BenchSummarizer(), session=sid)
    # Right after the resume: the session's events, read from its journal, none in memory.
    assert list(second.events) == before and second.events.in_memory == 0
    assert second.events[-1] == before[-1]
    after = drive(second, 30, start=30)
    assert len(after) > 2 * WINDOW
    assert list(second.events) == before + after
    assert second.events[len(before)] == after[0]
    assert second.events.in_memory <= 2 * WINDOW


def test_an_engine_without_a_journal_keeps_every_event(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(event_module, "EVENT_WINDOW", 1)
    seed = Policy.seed(context_limit=4_000, echo=False)
    compactor = Compactor(seed, MemoryStore(), BenchSummarizer())
    emitted = drive(compactor, 30)
    assert len(emitted) > 2
    assert compactor.events.in_memory == len(emitted) and compactor.events == emitted
