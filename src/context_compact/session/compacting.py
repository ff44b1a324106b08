"""The session engine's passes, and when a summary comes: the decisions ``prepare`` orders.

``CompactingSession`` runs each pass of ``passes.py`` (persist, clear in ``clearing.py``,
summarize, a provider's compaction adopted or asked for) under the call's faults (``_guarded``:
a write the store refuses skips the call's other passes) and records the edit it decides
(``_take``). It decides when a summary comes with a clearing (``_summary_due``, the rule of
``cadence.summary_due``), and, with a model summarizer, looks ahead: past the soft mark it fixes
the next summary's range and asks for its summary early (``_look_ahead``), which the trigger
then uses when that range still starts its plan (``_summarize_fixed``).

Invariant: a pass decides an edit as data after writing its copies; only ``_take`` records
it (with its event), so nothing leaves the view before its durable copy exists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..engine import Message
from ..messages import Block, copy_json
from . import (
    ahead,
    binding,
    cadence,
    clearing,
    knobs,
    native,
    native_tier,
    passes,
    summary,
    thinking,
)
from .recall import index_name
from .records import Edit, NativeEdit, Setting, Strip, SummaryEdit
from .windowed import WindowedSession

NEVER = -(10**12)
NATIVE_SETTING = "native_compaction"
"""The ``Setting`` that turns the provider's compaction off for a session (``False``) once it
refused under ``native="auto"``: journaled, so a resumed session does not ask again."""


class CompactingSession(WindowedSession):
    """The passes and the summary's decisions (``compacting.py``)."""

    @property
    def _native_off(self) -> bool:
        """``native="auto"`` and the provider refused a compaction of this session once."""
        return self.state.settings.get(NATIVE_SETTING) is False

    def _io(self) -> passes.PassIO:
        # ``True`` asks every time (and says why not when nothing was handed in); ``"auto"``
        # only where a compaction was handed in and the provider has not refused one.
        mode = self.policy.native
        tier = mode is True or (mode == "auto" and self.native is not None and not self._native_off)
        return passes.PassIO(
            self.store,
            index_name(self.sid()),
            self._summarize,
            self._native_block if tier else None,
        )

    def _native_block(self, messages: list[Message]) -> Block | None:
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
            if self.policy.native == "auto" and not self._native_off:
                self._record(Setting(NATIVE_SETTING, False, f"refused ({type(error).__name__})"))
            off = "; native compaction off for this session" if self._native_off else ""
            note = f"native compaction failed ({type(error).__name__}: {error}"[:300]
            self._emit("native_fallback", 0, 0, (), f"{note}); our own summary used{off}")
            return None

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
        shown = binding.Before.of(self.state) if self.state.preserved else None
        edit = make()
        if edit is not None:
            self._record(edit)
            paths, note, score = passes.event_of(edit)
            timing = self.summaries.take_timing() if isinstance(edit, SummaryEdit) else None
            self._emit(stage, before, self.state.measure(), paths, note, score, timing)
            if shown is not None:
                self._strip(binding.strip_for(self.state, shown, edit, stage))

    def _strip(self, strip: Strip | None) -> None:
        """Take the thinking blocks a change invalidated out of the view, in the same view
        as the change (``thinking.py``), and say how many left."""
        if strip is None:
            return
        state = self.state
        size = state.measure()
        count = binding.count_from(state, strip.seq, strip.block)
        self._record(strip)
        self._emit(
            "strip_thinking",
            size,
            state.measure(),
            (),
            f"{count} thinking block(s) from message {strip.seq} on left the view: "
            + thinking.REASONS.get(strip.reason, f"{strip.reason} changed what came before them"),
            None,
            None,
        )

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
            lambda: clearing.clear(
                state, self.policy, io, target, force, futile_below, last_resort
            ),
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
            ledger_tokens=self.policy.ledger_size,
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
