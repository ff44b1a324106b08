"""The session's journal as the engine writes it, and the one point where a call commits.

A call's records (messages, edits, events) are held while it runs and appended to the
store in one ``append`` when it ends, also when it fails with an error of its own
(``commit``). The engine's state never runs ahead of the journal: when that append does
not return (a store error, ``SessionLocked``, a fenced writer, ``KeyboardInterrupt``, a
bug), the engine drops the state the call built and reads the session back from the store
before its next call (``reload``): the store's journal, not memory, says what happened.
A retry of the failed call therefore journals what the failed one did not, and a batch that
landed after all (an interrupt after the store committed) is found there, not written twice.

Records added between calls (a calibration from ``observe``, the overhead of the request)
are kept pending for the next call; a reload keeps them when the failed append did not
land. The session is created in the store on first use; of two compactors on one session
and store object, a stale one is refused (``session/holders.py``). Every event the engine
emits is journaled here, in order, so ``read_events`` can give back the older part of
``Compactor.events``.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from ..errors import CorruptStore, StoreUnavailable
from ..events import CompactionEvent
from ..store.base import NOT_REFUSED, STORE_ERRORS, Checkpointed, Meta, Store
from . import checkpoint, holders
from . import records as rec
from .records import Read, Record

# ``start(checkpoint, at)``: the state made afresh (None) or restored from the checkpoint
# record read at position ``at``; the event records before it.
Start = Callable[[dict[str, Any] | None, int], int]
# ``snapshot(at, events)``: the checkpoint record of the state now, to go at position ``at``.
Snapshot = Callable[[int, int], dict[str, Any]]
# What makes a checkpoint unusable: the full replay that follows decides whether the journal
# itself is damaged (and says so), so nothing is resumed from a state it did not verify.
_UNUSABLE = (CorruptStore, ValueError, KeyError, TypeError, IndexError, AttributeError)
# Checkpoints tried, newest first, before a full replay: each try reads the journal from its
# checkpoint on, so trying all of them after a damage they share would cost O(n²) reads.
TRIES = 3

_R = TypeVar("_R")


def _checkpoints_noted(records: Iterator[_R], at: list[int]) -> Iterator[_R]:
    """``records`` as they are, the position of each checkpoint record among them put in
    ``at``."""
    for n, record in enumerate(records):
        if isinstance(record, dict) and record.get("kind") == checkpoint.KIND:
            at.append(n)
        yield record


def describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


class SessionJournal:
    def __init__(self, store: Store, meta: Callable[[], Meta], owner: object) -> None:
        self.store = store
        self._meta = meta
        self._owner = owner  # the engine: the session's holder in this process
        self.session_id: str | None = None
        self.pending: list[Record] = []  # the call's records, in order
        self.carried: list[Record] = []  # added between calls, appended with the next call's
        self.calling = False
        # The call's append, as JSON, and the journal's length it was appended at: kept
        # until the next call begins (``begin``), so a call stopped anywhere after its append
        # (inside ``commit`` too) finds it landed on reload.
        self._batch: list[dict[str, Any]] | None = None
        self._batch_at = 0
        self.length = 0  # records in the store's journal, as this object last read or wrote
        self._generation = 0  # appends to the session through this store object
        # Event records the session's journal holds, a resumed session's earlier ones
        # included: ``Compactor.events`` is the session's, not only this object's.
        self.events_written = 0
        self.checkpointed = 0  # the position of the newest checkpoint this object knows
        # Why the last resume did not start from the newest checkpoint, when it did not.
        self.fallback: str | None = None

    def open(self, session: str, apply: Callable[[Read], None], start: Start) -> None:
        """Continue ``session``: ``start`` the state from its newest checkpoint that reads
        back whole (or afresh), then ``apply`` each record after it, in order (none if the
        store has no such session yet: it is created under that id)."""
        with holders.reading(self.store, session):
            meta = self.store.session_meta(session)
            self.session_id = session
            self._generation = holders.opened(self.store, session, self._owner)
            if meta is None:
                self.store.create_session({**self._meta(), "id": session})
                return
            self.length, self.events_written = self._replay(session, apply, start)

    def _replay(
        self,
        session: str,
        apply: Callable[[Read], None],
        start: Start,
        tail: deque[Any] | None = None,
    ) -> tuple[int, int]:
        """Records in the journal and event records before its end, the state rebuilt from
        the newest checkpoint that restores (``checkpoint.py``) and the records after it, or
        from every record when none does (``fallback`` then says why). Streamed: memory
        stays O(view); ``tail`` keeps the newest raw records read it has room for."""
        self.fallback = None
        store = self.store
        problems: list[str] = []
        if isinstance(store, Checkpointed):
            for at in list(reversed(store.checkpoints(session)))[:TRIES]:
                if tail is not None:
                    tail.clear()
                try:
                    found = store.records_from(session, at)
                    first = next(found, None)
                    if first is None or first.get("kind") != checkpoint.KIND:
                        raise rec.BadRecord(f"record {at} is not a checkpoint")
                    if tail is not None:
                        tail.append(first)
                    events = start(first, at)
                    length, more = self._apply_all(session, found, apply, at + 1, tail)
                except _UNUSABLE as error:
                    problems.append(f"the checkpoint at record {at} was not used ({error})")
                    continue
                self.checkpointed = at
                if problems:
                    problems.append(f"the resume started from the one at record {at}")
                self.fallback = "; ".join(problems) or None
                return length, events + more
        if tail is not None:
            tail.clear()
        start(None, 0)
        self.checkpointed = 0
        every: Iterator[Any] = store.records(session)
        unmarked: list[int] = []
        if isinstance(store, Checkpointed) and not problems:
            every = _checkpoints_noted(every, unmarked)
        counts = self._apply_all(session, every, apply, 0, tail)
        if unmarked:
            # Checkpoint records the store has no usable mark for (a lost or unreadable
            # marks file): nothing is wrong but the cost of this resume, which is said.
            problems.append(f"the checkpoint at record {unmarked[-1]} has no usable mark")
        if problems:
            problems.append("the resume replayed every record")
        self.fallback = "; ".join(problems) or None
        return counts

    def _apply_all(
        self,
        session: str,
        found: Iterator[Any],
        apply: Callable[[Read], None],
        length: int,
        tail: deque[Any] | None,
    ) -> tuple[int, int]:
        events = 0
        for raw in found:
            record = rec.read(raw, f"session {session}, record {length}")
            length += 1
            events += isinstance(record, rec.EventRecord)
            apply(record)
            if tail is not None:
                tail.append(raw)
        return length, events

    def reload(self, apply: Callable[[Read], None], start: Start) -> tuple[bool, bool]:
        """After a call whose append did not return: ``start`` and ``apply`` the session's
        records as the store holds them now (``_replay``). Whether that append is among them
        (it landed after all: the journal's newest records are the batch), and whether
        another writer appended since this object last read or wrote. Records pending from
        between calls are kept when nothing was appended, dropped otherwise (in the journal,
        or no longer apt)."""
        # Nothing is forgotten before the end, and the failed call's append is kept (until
        # the next call begins): a reload cut short (Ctrl-C lands anywhere) is done again
        # whole by the next call and finds the same.
        session, batch, kept = self.session_id, self._batch, self.carried
        if session is None:
            self.pending = []
            return False, False
        size = len(batch) if batch else 0
        before = self._batch_at if batch else self.length  # the length before the append
        tail: deque[Any] = deque(maxlen=size)
        with holders.reading(self.store, session):
            self._generation = holders.opened(self.store, session, self._owner)
            length, events = self._replay(session, apply, start, tail)
            landed = bool(batch) and length == before + size
            if landed and len(tail) < size and isinstance(self.store, Checkpointed):
                tail.extend(self.store.records_from(session, before))
        if landed and list(tail) != json.loads(json.dumps(batch)):
            landed = False
        moved = length != before and not landed
        self.carried = kept if length == before else []
        self.pending = []
        self.length = length
        self.events_written = events
        return landed, moved

    def sid(self) -> str:
        if self.session_id is None:
            self.session_id = self.store.create_session(self._meta())
            self._generation = holders.opened(self.store, self.session_id, self._owner)
        return self.session_id

    def begin(self) -> None:
        """A call begins: the append of the call before it is no longer in question."""
        self._batch = None

    def add(self, record: Record) -> None:
        (self.pending if self.calling else self.carried).append(record)

    def commit(self, snapshot: Snapshot | None = None) -> None:
        """Append what the call recorded, all or nothing; it raises what the append raised
        (a store error as ``StoreUnavailable``) and the engine then reloads. With
        ``snapshot`` (a call that ended well) the batch ends with a checkpoint of the state
        it leaves when ``checkpoint.EVERY`` records were appended since the last one."""
        records = self.carried + self.pending
        if not records:
            return
        batch = [rec.as_json(r) for r in records]
        at = self.length + len(batch)
        if snapshot is not None and at - self.checkpointed >= checkpoint.EVERY:
            events = sum(isinstance(r, rec.EventRecord) for r in records)
            batch.append(snapshot(at, self.events_written + events))
        sid = self.sid()
        # Where, then what: ``reload`` reads ``_batch_at`` only with a batch set.
        self._batch_at = self.length
        self._batch = batch
        try:
            with holders.writing(self.store, sid, self._owner, self._generation) as after:
                self.store.append(sid, batch)
        except NOT_REFUSED:
            raise
        except STORE_ERRORS as error:
            raise StoreUnavailable(
                f"the session journal could not be written ({describe(error)}); the call "
                "changed nothing and can be retried as it was. Free space or fix the "
                "store's permissions."
            ) from error
        self._generation = after
        self.length = self._batch_at + len(batch)
        if len(batch) > len(records):
            self.checkpointed = at
        self.events_written += sum(isinstance(r, rec.EventRecord) for r in records)
        self.carried, self.pending = [], []

    def read_events(self, start: int, stop: int) -> list[CompactionEvent]:
        """The events numbered ``start`` to ``stop`` (exclusive) of the session's journal,
        read back from the store (``Compactor.events`` keeps only the newest
        in memory: ``events.EventLog``). One pass over the journal, reading only its event
        records: for the rare look far back, not for every turn."""
        if self.session_id is None or start >= stop:
            return []
        first, last = start, stop
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
        record.extra.get("timing"),
    )


__all__ = ["SessionJournal", "describe", "event_of"]
