"""The session engine's base: its state, its journal, and the one point where a call commits.

``JournaledSession`` holds what every layer of the engine shares (the state, the syncer,
the journal, the summarizer's caller, the faults of the call) and the durable session: it
opens a session from the store (a checkpoint, then the records after it, replayed through
``SessionState.apply``), reads it back after a failed call (``_reload``), and journals
every record and event (``_record``, ``_emit``). The layers above it
(``windowed.py``, ``compacting.py``, ``engine.py``) change the state only through
``_record`` inside ``_journaled``.

Invariant: the state never runs ahead of the journal. A call whose append does not return
leaves the engine stale; the next call (or ``view``, ``observe``...) first reads the
session back from the store (``_current``), so memory holds only what the journal holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any

from ..engine import Env
from ..errors import InvalidHistory
from ..events import CompactionEvent
from ..keys import content_key
from ..store import holders
from ..store.base import turn
from ..summarize import adapt
from . import ahead, checkpoint, limits, undo
from .durable import SessionJournal
from .faults import Faults
from .handout import Handout
from .native_tier import NativeCompact
from .policy import SessionPolicy
from .recall import SearchableLog
from .records import EventRecord, MessageRecord, Read, Record, Undo, Window, journal
from .state import SessionState
from .summarizing import SummaryCaller
from .syncing import Sync


class JournaledSession(SearchableLog):
    """The engine's shared state and its durable session (``journaled.py``)."""

    name: str

    def __init__(self, policy: SessionPolicy, env: Env) -> None:
        self.given = policy
        self._windowed: tuple[Window | None, SessionPolicy] = (None, policy)
        self.env = env
        self.store = env.store
        self.state = SessionState(env.counter, policy.ledger)
        self.syncer = Sync()
        self.recognizer = self.syncer.recognizer
        self.journal = SessionJournal(self.store, self._meta, self)
        self._stale = False  # a call's append did not return: reload before going on
        self._appended_failed = False  # ... or returned, and the call failed after it
        self._lent = False  # the format edge copies the view it converts (``lent``)
        self._handout = Handout()  # the copies of the view handed out last
        # The journal was continued by another writer since this engine's last call: a list
        # that extends neither view nor log is then that writer's session, not a new one.
        self._moved = False
        self._returned: tuple[int, int] | None = None
        self.summaries = SummaryCaller(
            adapt(env.summarizer),
            policy,
            env.counter,
            lambda stage, before, after, note: self._emit(stage, before, after, (), note),
        )
        self.ahead = ahead.enabled(policy, env.summarizer)
        # The provider's compaction, handed in by the drop-in client (``native_tier.py``).
        self.native: NativeCompact | None = None
        self._undone: set[int] = set()  # journal positions of the edits undone (undo.py)
        self.over_limit = 0
        self.faults = Faults()
        self._window_said: tuple[int, str] | None = None
        if env.session is not None:
            self._open(env.session)

    # -- the durable session ---------------------------------------------------------------
    @property
    def session_id(self) -> str | None:
        return self.journal.session_id

    def _open(self, session: str) -> None:
        self._undone = set()
        self.journal.open(session, self._apply, self._start)
        self._rebuild_if_undone()
        self._fell_back()

    def _start(self, raw: dict[str, Any] | None, at: int) -> int:
        """The state afresh, or as the checkpoint ``raw`` read at ``at`` holds it (before the
        records after it are applied); the event records before it."""
        self._undone = set()
        if raw is None:
            self.state = SessionState(self.env.counter, self.given.ledger)
            return 0
        self.state, events = checkpoint.restore(raw, self.env.counter, at, self.given.ledger)
        return events

    def _snapshot(self, at: int, events: int) -> dict[str, Any]:
        return checkpoint.capture(self.state, at, events)

    def _fell_back(self) -> None:
        """A resume that could not start from the newest checkpoint says why (journaled
        with the next call): it cost a longer replay, and a checkpoint was damaged."""
        if self.journal.fallback is not None:
            size = self.state.measure()
            self._emit("checkpoint_skipped", size, size, (), self.journal.fallback)

    def _apply(self, record: Read) -> None:
        if isinstance(record, Undo):
            # The records after it are applied in ``_rebuild_if_undone``, to a state built
            # without the undone edits.
            self._undone.add(record.record)
        elif self._undone:
            return
        elif isinstance(record, MessageRecord):
            self.state.add_message(record, content_key(record.message))
        else:
            self.state.apply(record)

    def _rebuild_if_undone(self) -> None:
        """With an undo among the records replayed, the state built again from the start of
        the journal without every edit undone in it (``undo.py``)."""
        if not self._undone or self.session_id is None:
            return
        sid = self.session_id
        skip = undo.undone(journal(self.store.records(sid), f"session {sid}"))
        records = journal(self.store.records(sid), f"session {sid}")
        self.state = undo.rebuild(self.env.counter, records, skip, self.given.ledger)
        self._undone = set()

    def _reload(self) -> None:
        """Drop the state a failed call built and read the session back from the store; the
        records recorded between calls are applied again when the failed append did not
        land (``SessionJournal.reload``)."""
        self._returned = None
        landed, moved = self.journal.reload(self._apply, self._start)
        # Replaced only now: a reload cut short is done again whole, the failed call's list
        # still known.
        failed = self.syncer
        self.syncer = Sync()
        self.recognizer = self.syncer.recognizer
        if landed or self._appended_failed:
            # The failed call's records are in the journal (its append returned, or an
            # error after it): the list it was given is what a retry repeats, not the view
            # it never handed out, so the retry adds nothing and starts nothing new.
            self.syncer.keep_input(failed)
        self._rebuild_if_undone()
        for record in self.journal.carried:
            self.state.apply(record)
        self._fell_back()
        self.env.forget(self.journal.events_written)
        self._moved = self._moved or moved
        self._stale = self._appended_failed = False

    def _current(self) -> None:
        if self._stale:
            self._reload()

    def _meta(self) -> dict[str, Any]:
        return {"engine": self.name, "policy": asdict(self.given)}

    @property
    def policy(self) -> SessionPolicy:
        """The policy given, its ``context_limit`` capped by the window the server stated
        (``use_window``): every pass sizes against what the server can take."""
        window = self.state.window
        if self._windowed[0] is not window:
            self._windowed = (window, limits.windowed(self.given, window))
        return self._windowed[1]

    def sid(self) -> str:
        return self.journal.sid()

    def session(self) -> str:
        return self.sid()

    def _record(self, record: Record) -> None:
        if not isinstance(record, MessageRecord):
            self.state.apply(record)
        self.journal.add(record)

    @contextmanager
    def _journaled(self) -> Iterator[None]:
        """The commit point: the call's records are appended at its end, also when it fails
        with an error of its own (which the append then does not hide). A call that fails
        leaves the state to be read back from the store before the next call: an error or a
        signal between a change of the state and its record (``KeyboardInterrupt`` lands
        anywhere) would leave memory ahead of what was journaled. The one exception is a
        history refused before the call recorded anything (validation comes first)."""
        self._current()
        self.faults = Faults()
        journal = self.journal
        failures = self.summaries.failures
        committed = appended = False
        try:
            with holders.busy(self.store, journal.session_id, self), turn(self.store):
                journal.calling = True
                try:
                    yield
                except BaseException as error:
                    journal.calling = False
                    untouched = isinstance(error, InvalidHistory) and not journal.pending
                    try:
                        journal.commit()
                        committed, appended = untouched, True
                    except BaseException:
                        pass  # the call's own error is the one to report; the state reloads
                    raise
                journal.calling = False
                journal.commit(self._snapshot)
                committed = appended = True
        finally:
            journal.calling = False
            if not committed:
                self._stale = True
                # The call's error came after its records were appended (its own, or Ctrl-C
                # mid-call): they are the journal's newest, as an append that landed.
                self._appended_failed = appended
                self.env.forget(journal.events_written)
            if not appended:
                self.summaries.failures = failures
        self._moved = False

    def _emit(
        self,
        stage: str,
        before: int,
        after: int,
        paths: tuple[str, ...],
        note: str,
        score: dict[str, float | None] | None = None,
        timing: dict[str, Any] | None = None,
    ) -> None:
        event = CompactionEvent(stage, before, after, "tokens", paths, note, score, timing)
        extra = {"timing": timing} if timing is not None else {}
        self.journal.add(EventRecord(stage, before, after, "tokens", paths, note, score, extra))
        self.env.emit(event)
