"""The durable session: one object composed of its parts, and the one point where a call commits.

``Session`` holds the state (``state.py``), the journal (``durable.py``), the syncer and its
recognizer of the caller's list (``syncing.py``), the copies handed out (``handout.py``),
the summarizer's caller (``summarizing.py``) and the faults of the call (``faults.py``). It
opens a session from the store (a checkpoint, then the records after it, replayed through
``SessionState.apply``), reads it back after a failed call (``_reload``), logs what the
caller's list adds (``sync``), hands out the view (``view``), keeps the sizes the ladder
works against (``observe``, ``use_window``, ``overhead``, ``limit``), takes back a
compaction (``undo``), searches its log (``recall``, ``recover``), keeps what it learned of
its model and client (``learned.py``), and journals every record and event (``record``,
``emit``). The compaction ladder (``planner.py``) is
functions over it; the engine (``engine.py``) orders them.

Invariant: the state never runs ahead of the journal. It changes only through ``record``
inside ``with session.call():``; a call whose append does not return leaves the session
stale, and the next call (or ``view``, ``observe``...) first reads it back from the store
(``current``), so memory holds only what the journal holds. A change made between calls
(a calibration, a window, the overhead) is journaled with the next call.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any

from ..engine import PAGE, Env, Message, RecallPage
from ..errors import InvalidHistory, SessionLocked, UndoRefused
from ..events import CompactionEvent
from ..keys import chain_id, content_key
from ..store.base import Meta, turn
from . import ahead, binding, checkpoint, holders, learned, limits, undo
from .durable import SessionJournal
from .faults import Faults
from .handout import Handout
from .native_tier import NATIVE_SETTING, NativeCompact
from .policy import SessionPolicy, assumption
from .recall import recall as search_log
from .recall import recover as rebuilt_file
from .records import (
    Calibrate,
    EventRecord,
    MessageRecord,
    Overhead,
    Read,
    Record,
    Restart,
    Undo,
    Window,
    journal,
)
from .state import SessionState, clone
from .summarizing import SummaryCaller
from .syncing import Sync


class Session:
    """A durable session: its parts, its commit point, its view (``session.py``)."""

    def __init__(self, policy: SessionPolicy, env: Env, name: str = "default") -> None:
        self.name = name
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
            env.summarizer,
            policy,
            env.counter,
            lambda stage, before, after, note: self.emit(stage, before, after, (), note),
        )
        self.ahead = ahead.enabled(policy, env.summarizer)
        # The provider's compaction, handed in by the drop-in client (``native_tier.py``).
        self.native: NativeCompact | None = None
        self._undone: set[int] = set()  # journal positions of the edits undone (undo.py)
        self.over_limit = 0
        self.faults = Faults()
        self._window_said: tuple[int, str] | None = None
        # Said with the first event while the limit rests on a window assumed for the model.
        self._assumed = assumption(policy)
        # A strip the API asked for (a refusal, dropped blocks), made by the next call.
        self.pending_strip: tuple[tuple[int, int] | None, str] | None = None
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
            self.emit("checkpoint_skipped", size, size, (), self.journal.fallback)

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

    def current(self) -> None:
        if self._stale:
            self._reload()

    def _meta(self) -> Meta:
        return {"engine": self.name, "policy": asdict(self.given)}

    @property
    def policy(self) -> SessionPolicy:
        """The policy given, its ``context_limit`` capped by the window the server stated
        (``use_window``): every pass sizes against what the server can take."""
        window = self.state.window
        if self._windowed[0] is not window:
            self._windowed = (window, limits.windowed(self.given, window))
        return self._windowed[1]

    @property
    def limit(self) -> int:
        return self.policy.context_limit

    @property
    def native_off(self) -> bool:
        """``native="auto"`` and the provider refused a compaction of this session once."""
        return self.state.settings.get(NATIVE_SETTING) is False

    def sid(self) -> str:
        return self.journal.sid()

    def record(self, record: Record) -> None:
        if not isinstance(record, MessageRecord):
            self.state.apply(record)
        self.journal.add(record)

    @contextmanager
    def call(self) -> Iterator[None]:
        """The commit point: the call's records are appended at its end, also when it fails
        with an error of its own (which the append then does not hide). A call that fails
        leaves the state to be read back from the store before the next call: an error or a
        signal between a change of the state and its record (``KeyboardInterrupt`` lands
        anywhere) would leave memory ahead of what was journaled. The one exception is a
        history refused before the call recorded anything (validation comes first)."""
        self.current()
        self.journal.begin()
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

    def emit(
        self,
        stage: str,
        before: int,
        after: int,
        paths: tuple[str, ...],
        note: str,
        score: dict[str, float | None] | None = None,
        timing: dict[str, object] | None = None,
    ) -> None:
        if self._assumed and self.state.window is None:
            note = f"{note}; {self._assumed}" if note else self._assumed
        event = CompactionEvent(stage, before, after, "tokens", paths, note, score, timing)
        extra = {"timing": timing} if timing is not None else {}
        self.journal.add(EventRecord(stage, before, after, "tokens", paths, note, score, extra))
        self._assumed = ""
        self.env.emit(event)

    def read_events(self, start: int, stop: int) -> list[CompactionEvent]:
        return self.journal.read_events(start, stop)

    @property
    def events_written(self) -> int:
        return self.journal.events_written

    # -- the caller's side -----------------------------------------------------------------
    def sync(self, messages: list[Message]) -> None:
        """Log what the caller added since the last call (``syncing.py``); validate only that."""
        self._say_window()
        learned.bind_thinking(self, None)
        state = self.state
        for message, key in self.syncer.added(state, messages, self._restart):
            record = MessageRecord(state.n, chain_id(state.head, key), state.head, clone(message))
            state.add_message(record, key)
            # The content's JSON as counted, when the view shows the logged message itself
            # (not one rendered with a note: ``SessionState.add_message``).
            same = state.shown.messages[-1] is record.message
            text = state.shown.texts[-1] if same else None
            # Made directly: ``dataclasses.replace`` costs more than the record's own work.
            self.journal.add(
                MessageRecord(record.seq, record.id, record.parent, record.message, text)
            )
        self.syncer.accepted()

    def _restart(self) -> None:
        """The caller's list extends neither our view nor our log: a new conversation. The
        old one stays in the journal (nothing is lost); the view starts again. Not after
        another writer continued the session behind a failed call of ours: the caller's
        list is then a stale copy of that session, not a new conversation."""
        if self.state.conversation_len() == 0:
            return
        if self._moved:
            raise SessionLocked(
                f"session {self.session_id!r} was continued by another writer while this "
                "one's call failed, and the list given does not extend what it wrote; "
                "resume the session (Compactor(..., session=ID)) and continue from its view"
            )
        before = self.state.measure()
        self.record(Restart())
        self.emit(
            "session_restart", before, 0, (), "the caller's history no longer extends this one"
        )

    def view(self) -> list[Message]:
        """The request as it stands (after a resume: what the stopped process would send).
        It is the caller's: no object in it is the engine's, so editing it in place (moving
        a ``cache_control`` marker) changes neither the state nor the next view."""
        self.current()
        shown = self.state.shown.owned()
        out = list(shown) if self._lent else self._handout.copies(shown)
        self.recognizer.remember_view(out, self.state.shown.keys)
        self._returned = (len(out), self.state.estimate())
        return out

    def measure(self) -> int:
        return self.state.measure()

    @contextmanager
    def lent(self) -> Iterator[None]:
        """Calls whose views the format edge converts (and copies) before the caller sees
        them: the engine lends its own messages, so the edge's memo of what it converted
        holds across calls."""
        self._lent = True
        try:
            yield
        finally:
            self._lent = False

    # -- the sizes -------------------------------------------------------------------------
    def observe(self, prompt_tokens: int) -> None:
        """Real prompt tokens of the view returned last (system and tools included)."""
        self.current()
        if prompt_tokens <= 0 or self._returned is None or self._returned[1] <= 0:
            return
        length, estimate = self._returned
        ratio = min(3.0, max(0.5, prompt_tokens / estimate))
        kinds = self.state.learn_kinds(length, prompt_tokens)
        # Journaled with the next call's records: a process killed before then has not sent
        # another request, and its caller observes the same usage again when it resends.
        self.record(Calibrate(ratio, (length, prompt_tokens), kinds))

    def use_window(self, tokens: int, source: str) -> None:
        """The model's window as the server states it (its own report, or a refusal's "maximum
        context length is N"): journaled (with the next call, as ``observe``'s calibration),
        it caps the limit from now on, here and in a resumed session; the next call says so
        (a ``window`` event, a warning when an explicit ``context_limit`` was above it)."""
        self.current()
        known = self.state.window
        if tokens < limits.MIN_WINDOW or (known is not None and known.tokens == tokens):
            return
        before = self.limit
        self.record(Window(tokens, source))
        self._window_said = (before, limits.window_note(self.given, self.state.window))

    @property
    def window(self) -> tuple[int, str] | None:
        window = self.state.window
        return None if window is None else (window.tokens, window.source)

    def _say_window(self) -> None:
        said, self._window_said = self._window_said, None
        if said is not None:
            self.emit("window", said[0], self.limit, (), said[1])

    def overhead(self, tokens: int) -> None:
        self.current()
        if tokens != self.state.overhead:
            self.record(Overhead(tokens))

    # -- taking a compaction back, searching the log ---------------------------------------
    def undo(self) -> binding.Before:
        """Inside a call: take back the newest compaction not undone yet (a summary or a
        clearing) as a new record, the state rebuilt as if it had not happened, with what
        came since (``undo.py``); what the view showed before it. ``UndoRefused`` (nothing
        changed) when there is none, or when that view would be over the limit."""
        sid = self.sid()
        where = f"session {sid}"
        at, what = undo.target(journal(self.store.records(sid), where), sid)
        skip = {at} | undo.undone(journal(self.store.records(sid), where))
        records = journal(self.store.records(sid), where)
        state = undo.rebuild(self.env.counter, records, skip, self.given.ledger)
        for record in self.journal.carried:
            state.apply(record)
        state.apply(Undo(at))
        size = state.measure()
        if size > self.limit:
            # The counter's factors may have been set by the rebuild: set them back.
            self._stale = True
            raise UndoRefused(
                f"undoing the {what} (journal record {at}) would make the request "
                f"{size:,} tokens, over the limit of {self.limit:,}; nothing was changed"
            )
        before = self.state.measure()
        shown = binding.Before.of(self.state)
        self.state = state
        self.syncer = Sync()
        self.recognizer = self.syncer.recognizer
        self.journal.add(Undo(at))
        self.emit("undo_compaction", before, size, (), f"{what} undone (record {at})")
        return shown

    def recall(self, query: str, offset: int = 0, limit: int = PAGE) -> RecallPage:
        return search_log(self.store, self.sid(), query, offset=offset, limit=limit)

    def recover(self, path: str) -> str | bytes | None:
        return rebuilt_file(self.store, self.sid(), path)

    # -- what the session learned of its model and client (``learned.py``) ----------------
    def learn_model(self, model: str | None) -> None:
        learned.learn_model(self, model)

    def thinking_refused(self, at: tuple[int, int] | None) -> None:
        learned.thinking_refused(self, at)

    def thinking_dropped(self, paths: list[tuple[int, int]]) -> None:
        learned.thinking_dropped(self, paths)

    def set_prefix_mismatch(self, behavior: str | None) -> None:
        learned.set_prefix_mismatch(self, behavior)

    @property
    def prefix_mismatch(self) -> str | None:
        return learned.prefix_mismatch(self)

    def keep_setting(self, name: str, value: learned.Value, source: str) -> None:
        learned.keep_setting(self, name, value, source)

    def setting(self, name: str) -> learned.Value:
        return learned.setting(self, name)


__all__ = ["Session"]
