"""The session engine (our default): a durable append-only log and a view derived from it.

Each call, in this order:

1. **sync**: recognize the caller's list by content (``keys.Recognizer``), validate only what
   is new against the view's last message, and log it (a private copy, an id chained to its
   parent's).
2. **persist** the newest, unseen results that do not fit (``passes.persist``).
3. Over ``high_water`` x limit: **clear** seen results down to ``low_water`` x limit, then,
   when the clearing alone buys too few turns, **summarize** the oldest turns
   (``clearing.clear``, ``passes.summarize``, ``_summary_due``). A summary asked for ahead
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

The engine is built in layers, each a class of its own module, each adding one concern to
the one below: ``journaled.py`` (the state, the journal, the commit point) →
``windowed.py`` (the caller's list, the view, the sizes) → ``compacting.py`` (the passes,
when a summary comes, summaries made ahead) → ``SessionEngine`` here (the entry points and
their order).
"""

from __future__ import annotations

from typing import Any

from ..engine import Message
from ..errors import UndoRefused
from . import binding, knobs, thinking, undo
from .compacting import NEVER, CompactingSession
from .records import Calibrate, Setting, Undo, journal
from .syncing import Sync

_UNSET = object()


class SessionEngine(CompactingSession):
    """The Engine protocol and the DurableSession capability (``engine.py``)."""

    name = "default"
    # A strip the API asked for (a refusal, dropped blocks), made by the next call's sync.
    _pending_strip: tuple[tuple[int, int] | None, str] | None = None

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
                # A range fixed ahead (``ahead.py``) is summarized as it was asked for: its
                # messages are taken before the clearing, which comes first as always.
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
            self._emit("undo_compaction", before, size, (), f"{what} undone (record {at})")
            if state.preserved:
                # What the undo brought back changes the prefix of the thinking after it.
                self._strip(binding.strip_for(state, shown, None, "undo"))
            return self.view()

    # -- preserved thinking (``thinking.py``) -------------------------------------------------
    def learn_model(self, model: str | None) -> None:
        """The model a request names: under ``preserved_thinking="auto"`` a model known to
        check thinking blocks' prefixes turns the check on (journaled with the next call)."""
        self._current()
        self._binding(model)

    def thinking_refused(self, at: tuple[int, int] | None) -> None:
        """The API refused the view handed out last for a thinking block whose prefix changed
        (at ``(message, block)`` of that view, or somewhere: None): with the next call (the
        retry), every thinking block from there on leaves the view, for good; under
        ``"auto"`` the session learns that its model checks."""
        self._current()
        self._pending_strip = (at, "refusal")

    def thinking_dropped(self, paths: list[tuple[int, int]]) -> None:
        """The API dropped thinking blocks of the view handed out last (a response's
        ``input_transformations``): the next view leaves them out at the same point, so the
        prefix the provider caches does not move again."""
        self._current()
        if paths:
            self._pending_strip = (min(paths), "dropped")

    def sync(self, messages: Any) -> None:
        super().sync(messages)
        pending, self._pending_strip = self._pending_strip, None
        if pending is not None:
            self._repair(*pending)

    def keep_setting(self, name: str, value: str | int | float | bool | None, source: str) -> None:
        """Journal a per-session setting when it differs from the session's (the same type
        and value), so a resume reads it back (``state.settings``)."""
        self._current()
        known = self.state.settings.get(name, _UNSET)
        if type(known) is not type(value) or known != value:
            with self._journaled():
                self._record(Setting(name, value, source))

    def setting(self, name: str) -> str | int | float | bool | None:
        """The session's newest value of setting ``name`` (None when it has none)."""
        self._current()
        return self.state.settings.get(name)

    def set_prefix_mismatch(self, behavior: str | None) -> None:
        """Journal what the drop-in client asks of the API when a thinking block's prefix
        changed (``"drop_block"``, or None for the API's default), so a resume keeps it."""
        self._current()
        if self.state.settings.get(thinking.DROP_SETTING) != behavior:
            with self._journaled():
                self._record(Setting(thinking.DROP_SETTING, behavior, "client"))

    @property
    def prefix_mismatch(self) -> str | None:
        self._current()
        value = self.state.settings.get(thinking.DROP_SETTING)
        return value if isinstance(value, str) else None

    def _repair(self, at: tuple[int, int] | None, reason: str) -> None:
        """Inside a call, after its sync: the thinking from ``at`` of the view handed out
        last (which what the sync appended only extends) leaves the view."""
        state = self.state
        if self.policy.preserved_thinking == "auto" and not state.preserved:
            self._record(Setting(thinking.SETTING, True, reason))
        k = len(state.prefix)
        if at is None or at[0] < k:
            seq, block = state.first_kept, 0
        else:
            seq, block = state.first_kept + at[0] - k, at[1]
        self._strip(binding.strip_at(state, seq, block, reason))
        if reason == "refusal" and binding.opening_lost(state):
            # The API wants the turn in progress to open with its thinking block, and
            # that block was refused: the turn is closed by a summary (its newest steps
            # ride along), so the model's next message opens a new one. (A block the API
            # dropped itself is not closed over: its reply was made without it.)
            request = binding.request_text(state)
            self._guarded(
                lambda: self._summarize_old(0, request, 0, least=NEVER, stage="compact_history"),
                "compact_history",
            )
            self._fault_check("close the turn whose thinking was refused", always=True)

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
