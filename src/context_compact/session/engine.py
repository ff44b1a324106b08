"""The session engine (our default): a durable append-only log and a view derived from it.

Each call, in this order:

1. **sync**: recognize the caller's list by content (``keys.Recognizer``), validate only what
   is new against the view's last message, and log it (a private copy, an id chained to its
   parent's).
2. **persist** the newest, unseen results that do not fit (``passes.persist``).
3. Over ``high_water`` x limit: **clear** seen results down to ``low_water`` x limit, then,
   when the clearing alone buys too few turns, **summarize** the oldest turns
   (``clearing.clear``, ``passes.summarize``, ``planner.summary_due``). A summary asked for ahead
   (``ahead.py``) gives the text of the range fixed for it.
4. **look ahead**: past the soft mark, a few calls before the trigger, when the trigger will
   summarize, fix the next summary's range and ask for its summary on the summarizer's worker
   (``ahead.py``; with a model summarizer only).
5. **commit**: journal every record of the call (messages, edits, events) in one store
   append, then return the view (a copy: nothing in it is the engine's).

The commit point (``Session.call``): the state never runs ahead of the journal. A call whose
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

The engine is composed, not stacked: it has a ``Session`` (``session.py``: the state, the
journal, the commit point, the caller's side and the sizes) and runs the compaction ladder
of ``planner.py`` (functions over that session) in the order above.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..engine import Env, Message
from . import binding, knobs, planner
from .planner import NEVER
from .policy import SessionPolicy
from .records import Calibrate, Setting
from .session import Session
from .thinking import SETTING


class SessionEngine:
    """The Engine protocol over one durable ``Session`` (``engine.py``)."""

    name = "default"

    def __init__(self, policy: SessionPolicy, env: Env) -> None:
        self.session = Session(policy, env, self.name)

    @property
    def limit(self) -> int:
        return self.session.limit

    def request_parts(self, system: str | None, tools: Sequence[object] | None) -> None:
        """The request's system prompt and tools, for a summarizer that continues the
        agent's cached prefix (``SummaryRequest.sent``)."""
        self.session.summaries.fixed = (system, None if tools is None else list(tools))

    def observe(self, prompt_tokens: int) -> None:
        self.session.observe(prompt_tokens)

    def overhead(self, tokens: int) -> None:
        self.session.overhead(tokens)

    # -- entry points ----------------------------------------------------------------------
    def _sync(self, messages: list[Message]) -> None:
        """Log what the caller added (``Session.sync``); then, when the API refused the last
        view's thinking or dropped some of it, take it out of the view (``_repair``)."""
        session = self.session
        session.sync(messages)
        pending, session.pending_strip = session.pending_strip, None
        if pending is not None:
            self._repair(*pending)

    def record(self, messages: list[Message]) -> None:
        """Log what the caller appended (the model's last answer) without compacting (a
        provider's own compaction block in it is adopted: ``native.py``)."""
        session = self.session
        with session.call():
            self._sync(messages)
            planner.adopt_native(session, None)

    def prepare(self, messages: list[Message], request: str) -> list[Message]:
        session = self.session
        planner.fixed_part(session)
        with session.call():
            self._sync(messages)
            planner.adopt_native(session, request)
            planner.guarded(session, lambda: planner.persist(session), "persist")
            policy, state, limit = session.policy, session.state, session.limit
            high = knobs.high_water(state, policy) * limit
            fire, target = knobs.trigger(state, policy, limit, session.env.should_compact)
            if fire:
                # A range fixed ahead (``ahead.py``) is summarized as it was asked for: its
                # messages are taken before the clearing, which comes first as always.
                mark = state.ahead
                early = planner.early_input(session, mark, request) if mark is not None else None
                # A clearing that cannot even get under the high-water mark is skipped: the
                # summary that must follow would archive what it cleared (a cold start on a
                # long history); clearing runs after the summary if still needed.
                planner.guarded(
                    session,
                    lambda: planner.clear(
                        session, target, force=state.measure() > limit, futile_below=int(high)
                    ),
                    "clear",
                )
                # The summary comes with this clearing, whose rewrite is paid anyway, when the
                # clearing alone would buy too few turns (``planner.summary_due``).
                if planner.summary_due(session, target, high, request):
                    fixed = mark is not None and planner.summarize_fixed(
                        session, mark, early, target, request
                    )
                    least = 1 if state.measure() > limit else policy.clear_floor
                    if not fixed:
                        planner.guarded(
                            session,
                            lambda: planner.summarize(
                                session, target, request, policy.keep_recent_turns, least=least
                            ),
                            "summarize",
                        )
                if state.measure() > high:
                    force = state.measure() > limit
                    planner.guarded(
                        session, lambda: planner.clear(session, target, force=force), "clear"
                    )
                if state.measure() > limit:
                    # Still over: the recent turns' seen results go too (each keeps its copy),
                    # before the call gives up (a long turn that no summary may cut).
                    planner.guarded(
                        session,
                        lambda: planner.clear(session, target, force=True, last_resort=True),
                        "clear",
                    )
                if state.measure() > limit:
                    # Still over: everything but what the model has not seen yet goes into
                    # the summary (the summary closes the turn).
                    planner.guarded(
                        session,
                        lambda: planner.summarize(session, target, request, 0, least=1),
                        "summarize",
                    )
                planner.fault_check(session, "bring the context under its limit", always=False)
                planner.check_limit(session)
            planner.fault_check(session, "save new results", always=False)
            if session.ahead and session.faults.error is None:
                planner.look_ahead(session, request)
            return session.view()

    def undo(self) -> list[Message]:
        """Take back the newest compaction not undone yet (a summary or a clearing): a new
        record in the journal, the view rebuilt as if it had not happened, with what came
        since (``Session.undo``). The caller continues from the view returned."""
        session = self.session
        with session.call():
            shown = session.undo()
            if session.state.preserved:
                # What the undo brought back changes the prefix of the thinking after it.
                planner.strip(session, binding.strip_for(session.state, shown, None, "undo"))
            return session.view()

    def _repair(self, at: tuple[int, int] | None, reason: str) -> None:
        """Inside a call, after its sync: the thinking from ``at`` of the view handed out
        last (which what the sync appended only extends) leaves the view."""
        session = self.session
        state = session.state
        if session.policy.preserved_thinking == "auto" and not state.preserved:
            session.record(Setting(SETTING, True, reason))
        k = len(state.prefix)
        if at is None or at[0] < k:
            seq, block = state.first_kept, 0
        else:
            seq, block = state.first_kept + at[0] - k, at[1]
        planner.strip(session, binding.strip_at(state, seq, block, reason))
        if reason == "refusal" and binding.opening_lost(state):
            # The API wants the turn in progress to open with its thinking block, and
            # that block was refused: the turn is closed by a summary (its newest steps
            # ride along), so the model's next message opens a new one. (A block the API
            # dropped itself is not closed over: its reply was made without it.)
            request = binding.request_text(state)
            planner.guarded(
                session,
                lambda: planner.summarize(
                    session, 0, request, 0, least=NEVER, stage="compact_history"
                ),
                "compact_history",
            )
            planner.fault_check(session, "close the turn whose thinking was refused", True)

    def compact(
        self,
        messages: list[Message],
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
        session = self.session
        with session.call():
            self._sync(messages)
            planner.adopt_native(session, request)
            planner.guarded(session, lambda: planner.persist(session), "persist")
            planner.guarded(
                session,
                lambda: planner.summarize(
                    session,
                    0,
                    request,
                    keep_recent_turns,
                    least=NEVER,
                    instructions=instructions,
                    stage="compact_history",
                ),
                "compact_history",
            )
            planner.fault_check(session, "compact", always=True)
            return session.view()

    def reactive(self, messages: list[Message], request: str) -> list[Message]:
        """After a refusal: the request was at least as big as the limit, whatever we thought.

        The calibration ratio is raised so that the refused view measures at least the limit
        (the next real ``usage`` corrects it), then the view is compacted hard, down to the
        low-water mark and at least to half its size: a retry that resends the same request
        would be refused again.
        """
        session = self.session
        with session.call():
            self._sync(messages)
            planner.adopt_native(session, request)
            planner.guarded(session, lambda: planner.persist(session), "persist")
            state, limit = session.state, session.limit
            estimate = max(1, state.estimate())
            ratio = min(8.0, max(state.ratio, limit / estimate))
            session.record(Calibrate(ratio, None))
            target = min(int(session.policy.low_water * limit), state.measure() // 2)
            planner.guarded(session, lambda: planner.clear(session, target, force=True), "clear")
            if state.measure() > target:
                planner.guarded(
                    session,
                    lambda: planner.summarize(
                        session,
                        target,
                        request,
                        session.policy.keep_recent_turns,
                        least=NEVER,
                        stage="reactive_compact",
                    ),
                    "reactive_compact",
                )
            # The API refused this request as too long: resending it unchanged cannot help.
            planner.fault_check(session, "compact after the refusal", always=True)
            return session.view()


__all__ = ["SessionEngine"]
