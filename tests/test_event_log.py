"""``EventLog`` (``Compactor.events``): a read-only list whose old events may live in a store."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from context_compact.events import CompactionEvent, EventLog


def event(n: int) -> CompactionEvent:
    return CompactionEvent("clear_old_results", n + 1, n, "tokens", (f"p{n}",), f"note {n}")


class Journal:
    """What a store keeps: every event appended, and how many are written so far."""

    def __init__(self) -> None:
        self.events: list[CompactionEvent] = []
        self.written = 0
        self.reads = 0

    def read(self, start: int, stop: int) -> list[CompactionEvent]:
        self.reads += 1
        assert stop <= self.written, "only written events are read back"
        return self.events[start:stop]


def filled(count: int, window: int, written: int | None = None) -> tuple[EventLog, Journal]:
    journal = Journal()
    log = EventLog(journal.read, lambda: journal.written, window=window)
    for n in range(count):
        journal.events.append(event(n))
        journal.written = n + 1 if written is None else min(written, n + 1)
        log.append(event(n))
    return log, journal


def test_a_log_without_a_reader_keeps_every_event_in_memory() -> None:
    log = EventLog(window=2)
    for n in range(50):
        log.append(event(n))
    assert log.in_memory == 50 and log == [event(n) for n in range(50)]


def test_a_long_log_keeps_a_bounded_window_and_still_yields_every_event() -> None:
    log, journal = filled(5_000, window=100)
    assert log.in_memory <= 200
    assert len(log) == 5_000
    assert list(log) == journal.events
    assert log[0] == event(0) and log[-1] == event(4_999) and log[2_500] == event(2_500)
    assert log[4_990:] == journal.events[4_990:]
    assert log[10:20] == journal.events[10:20]


def test_events_the_store_has_not_written_stay_in_memory() -> None:
    log, journal = filled(1_000, window=10, written=5)
    assert log.in_memory >= 995
    assert list(log) == journal.events


def test_recent_events_are_read_without_the_store() -> None:
    log, journal = filled(1_000, window=100)
    before = journal.reads
    assert log[-50:] == journal.events[-50:]
    assert len(log[len(log) - 1 :]) == 1
    assert journal.reads == before


@given(
    st.integers(0, 300),
    st.integers(1, 20),
    st.integers(-400, 400),
    st.integers(-400, 400),
    st.sampled_from([1, 2, -1, 3]),
)
@settings(max_examples=200, deadline=None)
def test_indexing_and_slicing_match_a_list(
    count: int, window: int, start: int, stop: int, step: int
) -> None:
    log, journal = filled(count, window)
    assert log[start:stop:step] == journal.events[start:stop:step]
    if -count <= start < count:
        assert log[start] == journal.events[start]
    assert log == journal.events
    assert journal.events == log
    assert log != [*journal.events, event(-1)]
