"""The session engine (our default): a durable append-only log and a view derived from it.

Each call, in this order:

1. **sync**: recognize the caller's list by content (``keys.Recognizer``), validate only what
   is new against the view's last message, and log it (a private copy, an id chained to its
   parent's).
2. **persist** the newest, unseen results that do not fit (``passes.persist``).
3. Over ``high_water`` x limit: **clear** seen results down to ``low_water`` x limit, then,
   when the clearing alone buys too few turns, **summarize** the oldest turns
   (``passes.clear``, ``passes.summarize``, ``_summary_due``). A summary asked for ahead
   (``ahead.py``) gives the text of the range fixed for it.
4. **look ahead**: past the soft mark, a few calls before the trigger, when the trigger will
   summarize, fix the next summary's range and ask for its summary on the summarizer's worker
   (``ahead.py``; with a model summarizer only).
5. **commit**: journal every record of the call (messages, edits, events) in one store
   append, then return the view (a copy: nothing in it is the engine's).

The commit point (``_journaled``): the state never runs ahead of the journal. A call whose
append does not return, whatever stopped it (a store error, ``SessionLocked``, a fenced
writer, ``KeyboardInterrupt``, a bug), leaves no trace in the engine: its state is dropped
and read back from the store before the next call (``durable.py``), so the same call retried
journals what the failed one did not. A write a pass asks for and the store refuses skips
the call's other passes and keeps everything in view (``faults.py``).

Sizes are tokens of the request as sent: the API's last count of the view's head plus an
estimate of what came after (``observe``), the system prompt and tools included
(``overhead``). Per call the work is O(new messages): validation, hashing, sizing and the
journal touch only what is new; the identity checks that recognize the caller's list are a
pass of ``is`` over it.

Resume: ``Env.session`` names a session in the store; its journal is replayed through the
same ``SessionState.apply`` the live engine uses, so the next view is the one the process
that stopped would have sent. The caller continues with ``view()`` (or its own full history,
or the last view it kept, all recognized).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, replace
from typing import Any

from ..engine import Env, Message
from ..errors import CompactionFailed, InvalidHistory, SessionLocked, UndoRefused
from ..events import CompactionEvent
from ..keys import chain_id, content_key
from ..messages import copy_json
from ..store import holders
from ..store.base import turn
from ..summarize import adapt
from . import (
    ahead,
    cadence,
    checkpoint,
    knobs,
    limits,
    native,
    native_tier,
    passes,
    summary,
    undo,
)
from .durable import SessionJournal
from .faults import Faults
from .handout import Handout
from .native_tier import NativeCompact
from .policy import SessionPolicy
from .recall import SearchableLog
from .records import (
    Calibrate,
    Edit,
    EventRecord,
    MessageRecord,
    NativeEdit,
    Overhead,
    Read,
    Record,
    Restart,
    SummaryEdit,
    Undo,
    Window,
    journal,
)
from .state import SessionState, clone
from .summarizing import SummaryCaller
from .syncing import Sync

NEVER = -(10**12)
SUMMARY_SHARE = 0.15


class SessionEngine(SearchableLog):
    """The Engine protocol and the DurableSession capability (``engine.py``)."""

    name = "default"

    def __init__(self, policy: SessionPolicy, env: Env) -> None:
        self.given = policy
        self._windowed: tuple[Window | None, SessionPolicy] = (None, policy)
        self.env = env
        self.store = env.store
        self.state = SessionState(env.counter)
        self.syncer = Sync()
        self.recognizer = self.syncer.recognizer
        self.journal = SessionJournal(self.store, self._meta, self)
        self._stale = False  # a call's append did not return: reload before going on
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
        self._native_off = False  # ``native="auto"`` and the provider refused it once
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
            self.state = SessionState(self.env.counter)
            return 0
        self.state, events = checkpoint.restore(raw, self.env.counter, at)
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
        self.state = undo.rebuild(self.env.counter, records, skip)
        self._undone = set()

    def _reload(self) -> None:
        """Drop the state a failed call built and read the session back from the store; the
        records recorded between calls are applied again when the failed append did not
        land (``SessionJournal.reload``)."""
        self.syncer = Sync()
        self.recognizer = self.syncer.recognizer
        self._returned = None
        _, moved = self.journal.reload(self._apply, self._start)
        self._rebuild_if_undone()
        for record in self.journal.carried:
            self.state.apply(record)
        self._fell_back()
        self.env.forget(self.journal.events_written)
        self._moved = self._moved or moved
        self._stale = False

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

    def _io(self) -> passes.PassIO:
        # ``True`` asks every time (and says why not when nothing was handed in); ``"auto"``
        # only where a compaction was handed in and the provider has not refused one.
        mode = self.policy.native
        tier = mode is True or (mode == "auto" and self.native is not None and not self._native_off)
        return passes.PassIO(
            self.store,
            f"sessions/{self.sid()}.index.md",
            self._summarize,
            self._native_block if tier else None,
        )

    def _native_block(self, messages: list[Message]) -> dict[str, Any] | None:
        """The provider's block for ``messages`` (``native_tier.py``), or None after saying
        why our own summary is used instead."""
        compact = self.native
        try:
            if compact is None:
                raise RuntimeError(
                    "none here: the drop-in client's synchronous Anthropic calls offer it"
                )
            return native_tier.usable(compact(messages))
        except Exception as error:
            if self.policy.native == "auto":
                self._native_off = True
            off = "; native compaction off for this session" if self._native_off else ""
            note = f"native compaction failed ({type(error).__name__}: {error}"[:300]
            self._emit("native_fallback", 0, 0, (), f"{note}); our own summary used{off}")
            return None

    # -- syncing with the caller -----------------------------------------------------------
    def sync(self, messages: Any) -> None:
        """Log what the caller added since the last call (``syncing.py``); validate only that."""
        self._say_window()
        state = self.state
        for message, key in self.syncer.added(state, messages, self._restart):
            record = MessageRecord(state.n, chain_id(state.head, key), state.head, clone(message))
            state.add_message(record, key)
            # The content's JSON as counted, when the view shows the logged message itself
            # (not one rendered with a note: ``SessionState.add_message``).
            same = state.shown.messages[-1] is record.message
            text = state.shown.texts[-1] if same else None
            self.journal.add(replace(record, content_json=text))
        self.syncer.accepted()

    def _adopt_native(self, request: str | None) -> None:
        """A provider's compaction block the caller's request asked for (``native.py``):
        the view starts at it, what it replaced saved first."""
        if native.pending(self.state) is None:
            return
        io = self._io()
        self._guarded(
            lambda: self._take("native_compaction", lambda: native.adopt(self.state, io, request)),
            "native_compaction",
        )

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
        self._record(Restart())
        self._emit(
            "session_restart", before, 0, (), "the caller's history no longer extends this one"
        )

    def view(self) -> list[Message]:
        """The request as it stands (after a resume: what the stopped process would send).
        It is the caller's: no object in it is the engine's, so editing it in place (moving
        a ``cache_control`` marker) changes neither the state nor the next view."""
        self._current()
        shown = self.state.shown.owned()
        out = list(shown) if self._lent else self._handout.copies(shown)
        self.recognizer.prime(out, self.state.shown.keys)
        self._returned = (len(out), self.state.estimate())
        return out

    def measure(self) -> int:
        return self.state.measure()

    # -- calibration -----------------------------------------------------------------------
    @property
    def limit(self) -> int:
        return self.policy.context_limit

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

    def observe(self, prompt_tokens: int) -> None:
        """Real prompt tokens of the view returned last (system and tools included)."""
        self._current()
        if prompt_tokens <= 0 or self._returned is None or self._returned[1] <= 0:
            return
        length, estimate = self._returned
        ratio = min(3.0, max(0.5, prompt_tokens / estimate))
        kinds = self.state.learn_kinds(length, prompt_tokens)
        # Journaled with the next call's records: a process killed before then has not sent
        # another request, and its caller observes the same usage again when it resends.
        self._record(Calibrate(ratio, (length, prompt_tokens), kinds))

    def use_window(self, tokens: int, source: str) -> None:
        """The model's window as the server states it (its own report, or a refusal's "maximum
        context length is N"): journaled (with the next call, as ``observe``'s calibration),
        it caps the limit from now on, here and in a resumed session; the next call says so
        (a ``window`` event, a warning when an explicit ``context_limit`` was above it)."""
        self._current()
        known = self.state.window
        if tokens < limits.MIN_WINDOW or (known is not None and known.tokens == tokens):
            return
        before = self.limit
        self._record(Window(tokens, source))
        self._window_said = (before, limits.window_note(self.given, self.state.window))

    def _say_window(self) -> None:
        said, self._window_said = self._window_said, None
        if said is not None:
            self._emit("window", said[0], self.limit, (), said[1])

    def overhead(self, tokens: int) -> None:
        self._current()
        if tokens != self.state.overhead:
            self._record(Overhead(tokens))

    @property
    def summary_budget(self) -> int:
        """Tokens a summary may take: ``summary_max_tokens``, and at most ``SUMMARY_SHARE``
        of the limit, so that in a small window the summary cannot fill what the
        summarizing was meant to free."""
        return max(100, min(self.policy.summary_max_tokens, int(SUMMARY_SHARE * self.limit)))

    # -- passes ----------------------------------------------------------------------------
    def _guarded(self, run: Callable[[], None], stage: str) -> None:
        def warn(size: int, note: str) -> None:
            self._emit("store_error", size, size, (), note)

        self.faults.guarded(run, stage, self.state.measure, warn)

    def _fault_check(self, doing: str, always: bool) -> None:
        self.faults.check(doing, always, self.state.measure(), self.limit)

    def _take(self, stage: str, make: Callable[[], Edit | NativeEdit | None]) -> None:
        """Record the edit ``make`` decides (if any) and say what it did."""
        before = self.state.measure()
        edit = make()
        if edit is not None:
            self._record(edit)
            paths, note, score = passes.event_of(edit)
            timing = self.summaries.take_timing() if isinstance(edit, SummaryEdit) else None
            self._emit(stage, before, self.state.measure(), paths, note, score, timing)

    def _persist(self) -> None:
        io, counted = self._io(), passes.Sizes()

        def make() -> Edit | None:
            edit, sizes = passes.persist(self.state, self.policy, io, self.limit)
            counted.update(sizes)
            return edit

        self._take("persist_new_results", make)
        self.state.result_sizes.update(counted)  # once the edit is in the journal

    def _clear(
        self, target: int, force: bool, futile_below: int | None = None, last_resort: bool = False
    ) -> None:
        state, io = self.state, self._io()
        self._take(
            "clear_old_results",
            lambda: passes.clear(state, self.policy, io, target, force, futile_below, last_resort),
        )

    def _summarize_old(
        self,
        target: int,
        request: str,
        keep_turns: int,
        *,
        least: int,
        instructions: str | None = None,
        stage: str = "summarize",
    ) -> None:
        state = self.state
        ask = self._summary_ask(target, request, keep_turns, least, instructions)
        io, shown = self._io(), self.policy.summary_input_limit // 4
        self._take(stage, lambda: passes.summarize(state, io, ask, shown))

    def _summary_ask(
        self,
        target: int,
        request: str,
        keep_turns: int,
        least: int,
        instructions: str | None = None,
    ) -> summary.SummaryAsk:
        return summary.SummaryAsk(
            target=target,
            least=least,
            request=request,
            keep_turns=keep_turns,
            limit=self.limit,
            pin_budget=self.policy.user_words_share * self.limit / self.state.ratio,
            answered_chars=self.policy.answered_chars,
            allowance=min(summary.SUMMARY_ALLOWANCE, self.summary_budget),
            instructions=instructions,
        )

    def _summary_due(self, target: int, high: float, request: str) -> bool:
        """After the clearing of a call that compacts: whether its summary should come now.
        A summary is lossy and costs a call, a clearing is neither, but every compaction
        rewrites history: each should buy as many turns as it can. So the summary comes with
        this clearing (whose rewrite is paid anyway) when the clearing alone would buy too
        few turns (``cadence.summary_due``)."""
        state = self.state
        if not target or state.measure() > high:
            return True  # a trigger by count asks for a summary; still over: no choice left
        ask = self._summary_ask(
            target, request, self.policy.keep_recent_turns, self.policy.clear_floor
        )
        after = summary.projected(state, ask)
        if after is None:
            return False
        return self._pays(state.measure(), after, high)

    @staticmethod
    def _pays(cleared: float, summarized: float, high: float, slack: float = 0.0) -> bool:
        """The rule of ``_summary_due`` (``cadence.summary_due``) for a clearing to
        ``cleared`` and a summary to ``summarized`` under ``high``; ``slack`` is added to the
        payoff share for a prediction."""
        return cadence.summary_due(high - cleared, high - summarized, slack)

    def _summarize(
        self,
        messages: list[Message],
        request: str,
        instructions: str | None,
        previous: str | None,
        sent: list[Message] | None = None,
    ) -> str:
        return self.summaries.text(messages, instructions, previous, self.summary_budget, sent)

    def request_parts(self, system: str | None, tools: list[Any] | None) -> None:
        """The request's system prompt and tools, for a summarizer that continues the
        agent's cached prefix (``SummaryRequest.sent``)."""
        self.summaries.fixed = (system, tools)

    def _check_limit(self) -> None:
        size = self.state.measure()
        if size <= self.limit:
            self.over_limit = 0
            return
        self.over_limit += 1
        if self.over_limit >= self.policy.max_over_limit:
            raise CompactionFailed(self._too_big(size))
        # Never silently: the caller sees what is too big before the API refuses it.
        self._emit("over_limit", size, size, (), self._too_big(size))

    def _too_big(self, size: int) -> str:
        return limits.too_big(self.state, size, self.limit, self.over_limit)

    def _fixed_part(self) -> None:
        error = limits.fixed_part_error(self.state, self.limit)
        if error is not None:
            raise CompactionFailed(error)

    # -- entry points ----------------------------------------------------------------------
    def record(self, messages: Any) -> None:
        """Log what the caller appended (the model's last answer) without compacting (a
        provider's own compaction block in it is adopted: ``native.py``)."""
        with self._journaled():
            self.sync(messages)
            self._adopt_native(None)

    def prepare(self, messages: Any, request: str) -> list[Message]:
        self._fixed_part()
        with self._journaled():
            self.sync(messages)
            self._adopt_native(request)
            self._guarded(self._persist, "persist")
            policy, state = self.policy, self.state
            high = knobs.high_water(state, policy) * self.limit
            fire, target = knobs.trigger(state, policy, self.limit, self.env.should_compact)
            if fire:
                # A range fixed ahead (``ahead.py``) is summarized as the model last saw it:
                # its messages are taken before the clearing, which comes first as always.
                mark = state.ahead
                early = self._early_input(mark, request) if mark is not None else None
                # A clearing that cannot even get under the high-water mark is skipped: the
                # summary that must follow would archive what it cleared (a cold start on a
                # long history); clearing runs after the summary if still needed.
                self._guarded(
                    lambda: self._clear(
                        target, force=state.measure() > self.limit, futile_below=int(high)
                    ),
                    "clear",
                )
                # The summary comes with this clearing, whose rewrite is paid anyway, when the
                # clearing alone would buy too few turns (``_summary_due``).
                if self._summary_due(target, high, request):
                    fixed = mark is not None and self._summarize_fixed(mark, early, target, request)
                    least = 1 if state.measure() > self.limit else policy.clear_floor
                    if not fixed:
                        self._guarded(
                            lambda: self._summarize_old(
                                target, request, policy.keep_recent_turns, least=least
                            ),
                            "summarize",
                        )
                if state.measure() > high:
                    force = state.measure() > self.limit
                    self._guarded(lambda: self._clear(target, force=force), "clear")
                if state.measure() > self.limit:
                    # Still over: the recent turns' seen results go too (each keeps its copy),
                    # before the call gives up (a long turn that no summary may cut).
                    self._guarded(
                        lambda: self._clear(target, force=True, last_resort=True), "clear"
                    )
                if state.measure() > self.limit:
                    # Still over: everything but what the model has not seen yet goes into
                    # the summary (the summary closes the turn).
                    self._guarded(
                        lambda: self._summarize_old(target, request, 0, least=1), "summarize"
                    )
                self._fault_check("bring the context under its limit", always=False)
                self._check_limit()
            self._fault_check("save new results", always=False)
            if self.ahead and self.faults.error is None:
                self._look_ahead(request)
            return self.view()

    def _early_input(self, mark: tuple[int, int], request: str) -> ahead.Early | None:
        """The range fixed ahead as it stands before this call's clearing: what its summary
        was asked for with, and the view from its start on (``ahead.early``)."""
        ask = self._summary_ask(0, request, self.policy.keep_recent_turns, NEVER)
        chosen = summary.fixed(self.state, ask, *mark)
        if chosen is None:
            return None
        return ahead.early(self.state, self.policy, chosen)

    def _summarize_fixed(
        self, mark: tuple[int, int], early: ahead.Early | None, target: int, request: str
    ) -> bool:
        """The summary the trigger would make (``summary.plan``, after the clearing), its
        text the one asked for ahead of the range fixed at ``mark`` (``ahead.py``), what came
        after that range read off without a model; whether it was made. Not when the range no
        longer starts the plan, or the plan closes the turn or saves the first request's
        media (decided at the trigger, with a summary made there)."""
        state, policy = self.state, self.policy
        if early is None:
            return False
        least = 1 if state.measure() > self.limit else policy.clear_floor
        ask = self._summary_ask(target, request, policy.keep_recent_turns, least)
        chosen = summary.plan(state, ask)
        if chosen is None or chosen.closes or chosen.first_media or chosen.start != mark[0]:
            return False
        if chosen.cut < mark[1]:
            # The trigger would keep more than the range: the range, made ahead, frees more.
            fixed = summary.fixed(state, ask, *mark)
            if fixed is None:
                return False
            chosen = fixed
        budget, got, cut = self.summary_budget, early, chosen.cut

        def text(
            _: list[Message],
            __: str,
            focus: str | None,
            previous: str | None,
            sent: list[Message] | None = None,
        ) -> str:
            made = self.summaries.text(got.asked, focus, previous, budget)
            tail = got.view[mark[1] - mark[0] : cut - mark[0]]
            return self.summaries.capped(ahead.with_tail(made, tail, mark[1], budget), budget)

        io = passes.PassIO(self.store, self._io().index_name, text)
        seen = early.view[: cut - mark[0]]
        shown = policy.summary_input_limit // 4
        made = state.pinned.summaries
        self._guarded(
            lambda: self._take(
                "summarize",
                lambda: summary.edit(
                    state, chosen, ask, passes.effects(state, io, chosen, ask, shown, seen)
                ),
            ),
            "summarize",
        )
        return state.pinned.summaries > made

    def _summary_coming(self, request: str) -> bool:
        """Whether the coming trigger will summarize, predicted by the rule it applies after
        its clearing (``_summary_due``) on what that clearing would leave
        (``ahead.after_clearing``) and what its summary would (``ahead.after_summary``)."""
        state, policy = self.state, self.policy
        high = knobs.high_water(state, policy) * self.limit
        target = int(policy.low_water * self.limit)
        ask = self._summary_ask(target, request, policy.keep_recent_turns, policy.clear_floor)
        after = summary.projected(state, ask)
        if after is None:
            return False
        cleared = ahead.after_clearing(state, policy, self.limit)
        summarized = ahead.after_summary(state, policy, self.limit, after)
        return self._pays(cleared, summarized, high, ahead.SLACK)

    def _look_ahead(self, request: str) -> None:
        """Past the soft mark, fix the next summary's range (journaled) and ask for its
        summary on the summarizer's worker, once per content of that range (``ahead.py``)."""
        state, policy = self.state, self.policy
        keep = policy.keep_recent_turns
        if state.ahead is None:
            if state.measure() <= ahead.soft_mark(state, policy, self.limit):
                return
            if ahead.calls_to_trigger(state, policy, self.limit) > ahead.LEAD:
                return
            if not self._summary_coming(request):
                return
            goal = ahead.target(state, policy, self.limit)
            mark = ahead.mark(state, self._summary_ask(goal, request, keep, policy.clear_floor))
            if mark is None:
                return
            self._record(mark)
        start, cut = state.ahead or (0, 0)
        ask = self._summary_ask(0, request, keep, NEVER)
        chosen = summary.fixed(state, ask, start, cut)
        if chosen is None:
            return
        messages = ahead.summarizer_input(state, policy, chosen)
        if messages is None:
            return
        previous = state.pinned.summary_text if state.pinned.summary is not None else None
        summaries = self.summaries
        summaries.ahead(summaries.request(copy_json(messages), None, previous, self.summary_budget))

    def undo(self) -> list[Message]:
        """Take back the newest compaction not undone yet (a summary or a clearing): a new
        record in the journal, the view rebuilt as if it had not happened, with what came
        since (``undo.py``). ``UndoRefused`` (nothing changed) when there is none, or when
        that view would be over the limit. The caller continues from the view returned."""
        with self._journaled():
            sid = self.sid()
            where = f"session {sid}"
            at, what = undo.target(journal(self.store.records(sid), where), sid)
            skip = {at} | undo.undone(journal(self.store.records(sid), where))
            state = undo.rebuild(self.env.counter, journal(self.store.records(sid), where), skip)
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
            self.state = state
            self.syncer = Sync()
            self.recognizer = self.syncer.recognizer
            self.journal.add(Undo(at))
            self._emit("undo_compaction", before, size, (), f"{what} undone (record {at})")
            return self.view()

    def compact(
        self,
        messages: Any,
        request: str,
        instructions: str | None = None,
        keep_recent_turns: int = 1,
    ) -> list[Message]:
        """Summarize everything but the newest ``keep_recent_turns`` turns (the ``compact``
        tool, ``/compact``); 0 summarizes all: only the first request, the pinned user
        messages and the summary stay (with the results the model has not seen yet, carried
        in the closing message)."""
        if keep_recent_turns < 0:
            raise ValueError(f"keep_recent_turns must be >= 0, got {keep_recent_turns}")
        with self._journaled():
            self.sync(messages)
            self._adopt_native(request)
            self._guarded(self._persist, "persist")
            self._guarded(
                lambda: self._summarize_old(
                    0,
                    request,
                    keep_recent_turns,
                    least=NEVER,
                    instructions=instructions,
                    stage="compact_history",
                ),
                "compact_history",
            )
            self._fault_check("compact", always=True)
            return self.view()

    def reactive(self, messages: Any, request: str) -> list[Message]:
        """After a refusal: the request was at least as big as the limit, whatever we thought.

        The calibration ratio is raised so that the refused view measures at least the limit
        (the next real ``usage`` corrects it), then the view is compacted hard, down to the
        low-water mark and at least to half its size: a retry that resends the same request
        would be refused again.
        """
        with self._journaled():
            self.sync(messages)
            self._adopt_native(request)
            self._guarded(self._persist, "persist")
            state = self.state
            estimate = max(1, state.estimate())
            ratio = min(8.0, max(state.ratio, self.limit / estimate))
            self._record(Calibrate(ratio, None))
            target = min(int(self.policy.low_water * self.limit), state.measure() // 2)
            self._guarded(lambda: self._clear(target, force=True), "clear")
            if state.measure() > target:
                self._guarded(
                    lambda: self._summarize_old(
                        target,
                        request,
                        self.policy.keep_recent_turns,
                        least=NEVER,
                        stage="reactive_compact",
                    ),
                    "reactive_compact",
                )
            # The API refused this request as too long: resending it unchanged cannot help.
            self._fault_check("compact after the refusal", always=True)
            return self.view()


__all__ = ["SessionEngine"]
