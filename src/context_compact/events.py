"""Compaction events: what a stage did, how big the view was before and after, where copies went.

Every stage that changes the view emits exactly one event; the CLI prints them, a library
user subscribes with ``Compactor.subscribe(callback)`` or reads ``Compactor.events``.
A summary under the default engine carries ``score``: ``summary_score`` of the summary
against the messages it was given (share of identifiers, files, errors and user constraints
present; ``overall`` pools them; None where the source held none of a kind).

``EventLog`` is ``Compactor.events``: a read-only list of every event, of which an engine
that journals its events keeps only a bounded window in memory (the rest read back from
the store).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload


@dataclass(frozen=True)
class CompactionEvent:
    stage: str
    before: int
    after: int
    unit: str
    paths: tuple[str, ...] = ()
    note: str = ""
    score: Mapping[str, float | None] | None = None
    timing: Mapping[str, Any] | None = None
    """A summary's: ``started`` and ``ready`` (wall clock, seconds since the epoch; ready
    None if its answer never came in), ``waited`` (seconds the call waited for it) and
    ``ahead`` (asked for ahead of need, ``session/ahead.py``); with a summarizer that reports
    its model call's usage (``LLMSummarizer``), that call's ``input_tokens`` (cached ones
    included), ``cached_tokens`` and ``output_tokens``, beside the tokens the summary saved
    (``before - after``); None for other stages."""

    def __str__(self) -> str:
        where = f" -> {', '.join(self.paths)}" if self.paths else ""
        note = f" ({self.note})" if self.note else ""
        return f"[{self.stage}] {self.before:,} -> {self.after:,} {self.unit}{note}{where}"


# A reader of older events: the events numbered [start, stop) of this log, oldest first.
EventReader = Callable[[int, int], list[CompactionEvent]]

EVENT_WINDOW = 1_000
"""Events an ``EventLog`` with a reader keeps in memory: the newest this many (about 0.3 MB)."""


class EventLog(Sequence[CompactionEvent]):
    """``Compactor.events``: every event of this compactor's session, oldest first, as a
    read-only list; a resumed session's earlier events come first (``before`` of them, read
    from its journal when asked for).

    Without a reader (an engine that keeps no log) every event stays in memory. With one
    (the default engine, whose journal holds every event it emits) only the newest
    ``window`` stay; an older one is read back through ``reader`` when asked for, so memory
    stays flat however long the session runs. ``durable()`` says how many of the events are
    in the store already: an event leaves memory only once it is there (a journal append the
    store refused keeps its events, and so does this log).

    Indexing, slices (a list), iteration, ``len`` and ``==`` with a list work as on the
    list this used to be; reading an old event costs a read of the journal.
    """

    def __init__(
        self,
        reader: EventReader | None = None,
        durable: Callable[[], int] | None = None,
        window: int = EVENT_WINDOW,
        before: int = 0,
    ) -> None:
        self._recent: list[CompactionEvent] = []
        # The number of the oldest event in memory: a resumed session's earlier events (the
        # ``before`` its journal holds) are read from the store, none is in memory.
        self._first = before if reader is not None else 0
        self._reader = reader
        self._durable = durable
        self._window = max(1, window)

    def append(self, event: CompactionEvent) -> None:
        self._recent.append(event)
        if self._reader is None or self._durable is None or len(self._recent) <= 2 * self._window:
            return
        # Trimmed in batches (to ``window``), so appending stays O(1) amortized.
        drop = min(len(self._recent) - self._window, self._durable() - self._first)
        if drop > 0:
            del self._recent[:drop]
            self._first += drop

    def forget(self, kept: int) -> None:
        """The first ``kept`` events are those that stand: the journal holds them. Events
        after them were a failed call's (dropped); events up to them that memory lacks were
        a failed call's whose append landed after all (read back)."""
        if kept < len(self):
            del self._recent[max(0, kept - self._first) :]
        elif kept > len(self) and self._reader is not None:
            # A failed call's append landed after all: its events are the journal's.
            self._recent.extend(self._reader(len(self), kept))

    @property
    def in_memory(self) -> int:
        """How many events are held in memory (the rest are read from the store)."""
        return len(self._recent)

    def __len__(self) -> int:
        return self._first + len(self._recent)

    def _range(self, start: int, stop: int) -> list[CompactionEvent]:
        if start >= stop:
            return []
        older: list[CompactionEvent] = []
        if start < self._first:
            assert self._reader is not None  # events leave memory only with a reader
            older = self._reader(start, min(stop, self._first))
        lo = max(start, self._first) - self._first
        return older + self._recent[lo : max(lo, stop - self._first)]

    @overload
    def __getitem__(self, index: int) -> CompactionEvent: ...

    @overload
    def __getitem__(self, index: slice) -> list[CompactionEvent]: ...

    def __getitem__(self, index: int | slice) -> CompactionEvent | list[CompactionEvent]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step == 1:
                return self._range(start, stop)
            return [self[i] for i in range(start, stop, step)]
        n = len(self)
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError("event index out of range")
        if i >= self._first:
            return self._recent[i - self._first]
        return self._range(i, i + 1)[0]

    def __iter__(self) -> Iterator[CompactionEvent]:
        if self._first:
            yield from self._range(0, self._first)
        yield from list(self._recent)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EventLog | list):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like the list it replaces

    def __repr__(self) -> str:
        return repr(list(self))
