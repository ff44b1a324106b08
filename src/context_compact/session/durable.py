"""The session's journal as the engine writes it: records held for the call, appended at its end.

A call's records (messages, edits, events) are appended to the store in one ``append`` when
the call ends, also when it fails. An append the store refuses keeps its records, in order,
for the next call's append: the journal is always a whole prefix of what happened, never
torn, and the view already holds what it says. The session is created in the store on first
use; of two compactors on one session and store object, a stale one is refused
(``store/holders.py``). Every event the engine emits is journaled here, in order, so
``read_events`` can give back the older part of ``Compactor.events``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..errors import StoreUnavailable
from ..events import CompactionEvent
from ..store import holders
from ..store.base import STORE_ERRORS, Store
from . import records as rec
from .records import Read, Record


def describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


class SessionJournal:
    def __init__(self, store: Store, meta: Callable[[], dict[str, Any]]) -> None:
        self.store = store
        self._meta = meta
        self.session_id: str | None = None
        self.pending: list[Record] = []
        self._generation = 0  # appends to the session through this store object
        # Event records the journal held before this object's first (a resumed session's),
        # and those of this object appended since (``read_events`` counts from there).
        self.events_before = 0
        self.events_written = 0

    def open(self, session: str) -> Iterator[Read]:
        """Continue ``session``: its records to replay (none if the store has no such
        session yet: it is created under that id)."""
        meta = self.store.session_meta(session)
        self.session_id = session
        self._generation = holders.seen(self.store, session)
        if meta is None:
            self.store.create_session({**self._meta(), "id": session})
            return iter(())
        return self._counted(rec.journal(self.store.records(session), f"session {session}"))

    def _counted(self, records: Iterator[Read]) -> Iterator[Read]:
        for record in records:
            if isinstance(record, rec.EventRecord):
                self.events_before += 1
            yield record

    def sid(self) -> str:
        if self.session_id is None:
            self.session_id = self.store.create_session(self._meta())
            self._generation = holders.seen(self.store, self.session_id)
        return self.session_id

    def add(self, record: Record) -> None:
        self.pending.append(record)

    def flush(self, quiet: bool = False) -> None:
        """Append what the call recorded; ``quiet``: a refusal is kept, not raised."""
        if not self.pending:
            return
        pending, self.pending = self.pending, []
        try:
            sid = self.sid()
            self._generation = holders.write(self.store, sid, self._generation)
            self.store.append(sid, [rec.as_json(r) for r in pending])
            self.events_written += sum(isinstance(r, rec.EventRecord) for r in pending)
        except STORE_ERRORS as error:
            self.pending = pending + self.pending
            if quiet:
                return
            raise StoreUnavailable(
                f"the session journal could not be written ({describe(error)}); "
                f"{len(pending)} records are kept in memory and written by the next call "
                "that succeeds. Free space or fix the store's permissions."
            ) from error

    def read_events(self, start: int, stop: int) -> list[CompactionEvent]:
        """The events numbered ``start`` to ``stop`` (exclusive) of those appended through
        this object, read back from the store (``Compactor.events`` keeps only the newest
        in memory: ``events.EventLog``). One pass over the journal, reading only its event
        records: for the rare look far back, not for every turn."""
        if self.session_id is None or start >= stop:
            return []
        first, last = self.events_before + start, self.events_before + stop
        out: list[CompactionEvent] = []
        number = 0
        for raw in self.store.records(self.session_id):
            if raw.get("kind") != "event":
                continue
            if number >= first:
                record = rec.read(raw, f"session {self.session_id}, event {number}")
                if isinstance(record, rec.EventRecord):
                    out.append(event_of(record))
            number += 1
            if number >= last:
                break
        return out


def event_of(record: rec.EventRecord) -> CompactionEvent:
    """The event an ``EventRecord`` holds, as it was emitted."""
    return CompactionEvent(
        record.stage,
        record.before,
        record.after,
        record.unit,
        tuple(record.paths),
        record.note,
        record.score,
    )


__all__ = ["SessionJournal", "describe", "event_of"]
