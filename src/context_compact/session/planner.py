"""The compaction ladder: the passes and when a summary comes, as functions over a ``Session``.

Each step runs a pass of ``passes.py`` (persist, clear in ``clearing.py``, summarize, a
provider's compaction adopted or asked for) under the call's faults (``guarded``: a write the
store refuses skips the call's other passes) and records the edit it decides (``take``). It
decides when a summary comes with a clearing (``summary_due``, the rule of
``cadence.summary_due``), and, with a model summarizer, looks ahead: past the soft mark it fixes
the next summary's range and asks for its summary early (``look_ahead``), which the trigger
then uses when that range still starts its plan (``summarize_fixed``). The sizes it works
against are the session's (``Session.limit``, ``summary_budget``); ``check_limit`` and
``fixed_part`` say when the view stays over the limit or cannot get under it at all.

Every function takes the session first; the policy is the session's (capped by the window
the server stated), the pass I/O is built once per step (``io``). The engine (``engine.py``)
orders the steps.

Invariant: a pass decides an edit as data after writing its copies; only ``take`` records
it (with its event), so nothing leaves the view before its durable copy exists.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import markers
from ..engine import Message
from ..errors import CompactionFailed
from ..messages import Block, copy_json
from ..summary.facts import Readings
from . import (
    ahead,
    attribution,
    binding,
    cadence,
    clearing,
    knobs,
    limits,
    native,
    native_tier,
    passes,
    summary,
    thinking,
)
from .recall import index_name
from .records import Edit, NativeEdit, Setting, Strip, SummaryEdit
from .session import Session

NEVER = -(10**12)
SUMMARY_SHARE = 0.15


def io(session: Session) -> passes.PassIO:
    """The pass I/O: the store, the session's index file, the summarizer, the provider's
    compaction when the policy asks for it."""
    # ``True`` asks every time (and says why not when nothing was handed in); ``"auto"``
    # only where a compaction was handed in and the provider has not refused one.
    mode = session.policy.native
    tier = mode is True or (
        mode == "auto" and session.native is not None and not session.native_off
    )
    return passes.PassIO(
        session.store,
        index_name(session.sid()),
        lambda messages, request, instructions, previous, sent, readings: summary_text(
            session, messages, request, instructions, previous, sent, readings
        ),
        (lambda messages: native_block(session, messages)) if tier else None,
    )


def native_block(session: Session, messages: list[Message]) -> Block | None:
    """The provider's block for ``messages`` (``native_tier.py``), or None after saying
    why our own summary is used instead."""
    compact = session.native
    try:
        if compact is None:
            raise RuntimeError(
                "none here: the drop-in client's synchronous Anthropic calls offer it"
            )
        return native_tier.usable(compact(messages))
    except Exception as error:
        if session.policy.native == "auto" and not session.native_off:
            reason = f"refused ({type(error).__name__})"
            session.record(Setting(native_tier.NATIVE_SETTING, False, reason))
        off = "; native compaction off for this session" if session.native_off else ""
        note = f"native compaction failed ({type(error).__name__}: {error}"[:300]
        session.emit("native_fallback", 0, 0, (), f"{note}); our own summary used{off}")
        return None


def adopt_native(session: Session, request: str | None) -> None:
    """A provider's compaction block the caller's request asked for (``native.py``):
    the view starts at it, what it replaced saved first."""
    if native.pending(session.state) is None:
        return
    pass_io = io(session)
    guarded(
        session,
        lambda: take(
            session,
            "native_compaction",
            lambda: native.adopt(session.state, pass_io, request),
        ),
        "native_compaction",
    )


# -- running a pass and recording its edit --------------------------------------------------
def guarded(session: Session, run: Callable[[], None], stage: str) -> None:
    def warn(size: int, note: str) -> None:
        session.emit("store_error", size, size, (), note)

    session.faults.guarded(run, stage, session.state.measure, warn)


def fault_check(session: Session, doing: str, always: bool) -> None:
    session.faults.check(doing, always, session.state.measure(), session.limit)


def take(session: Session, stage: str, make: Callable[[], Edit | NativeEdit | None]) -> None:
    """Record the edit ``make`` decides (if any) and say what it did."""
    state = session.state
    before = state.measure()
    shown = binding.Before.of(state) if state.preserved else None
    previous = state.pinned.summary_text if state.pinned.summary is not None else None
    marked = attribution.marked(previous)
    edit = make()
    if edit is not None:
        session.record(edit)
        paths, note, score = passes.event_of(edit)
        timing = session.summaries.take_timing() if isinstance(edit, SummaryEdit) else None
        session.emit(stage, before, state.measure(), paths, note, score, timing)
        if isinstance(edit, SummaryEdit):
            unverified(session, edit, marked)
        if shown is not None:
            strip(session, binding.strip_for(state, shown, edit, stage))


def unverified(session: Session, edit: SummaryEdit, before: list[str]) -> None:
    """Say which lines of a new summary attribute to the user words no user message holds
    (marked in its text by ``passes.checked``); those the previous summary had marked and
    this one carries over were said then."""
    new = [line for line in attribution.marked(edit.text) if line not in before]
    if not new:
        return
    size = session.state.measure()
    first = " ".join(new[0].replace(markers.UNVERIFIED_USER, "").split())[:200]
    session.emit(
        "summary_unverified",
        size,
        size,
        (edit.archive,),
        f"{len(new)} line(s) of summary {session.state.pinned.summaries} attribute to the user "
        f"words no user message holds; marked in the summary, not the user's words: {first}",
    )


def strip(session: Session, made: Strip | None) -> None:
    """Take the thinking blocks a change invalidated out of the view, in the same view
    as the change (``thinking.py``), and say how many left."""
    if made is None:
        return
    state = session.state
    size = state.measure()
    count = binding.count_from(state, made.seq, made.block)
    session.record(made)
    session.emit(
        "strip_thinking",
        size,
        state.measure(),
        (),
        f"{count} thinking block(s) from message {made.seq} on left the view: "
        + thinking.REASONS.get(made.reason, f"{made.reason} changed what came before them"),
        None,
        None,
    )


# -- the passes ------------------------------------------------------------------------------
def persist(session: Session) -> None:
    pass_io, counted = io(session), passes.Sizes()

    def make() -> Edit | None:
        edit, sizes = passes.persist(session.state, session.policy, pass_io, session.limit)
        counted.update(sizes)
        return edit

    take(session, "persist_new_results", make)
    session.state.result_sizes.update(counted)  # once the edit is in the journal


def clear(
    session: Session,
    target: int,
    force: bool,
    futile_below: int | None = None,
    last_resort: bool = False,
) -> None:
    state, pass_io, policy = session.state, io(session), session.policy
    take(
        session,
        "clear_old_results",
        lambda: clearing.clear(state, policy, pass_io, target, force, futile_below, last_resort),
    )


def summarize(
    session: Session,
    target: int,
    request: str,
    keep_turns: int,
    *,
    least: int,
    instructions: str | None = None,
    stage: str = "summarize",
) -> None:
    state = session.state
    ask = summary_ask(session, target, request, keep_turns, least, instructions)
    pass_io, shown = io(session), session.policy.summary_input_limit // 4
    take(session, stage, lambda: passes.summarize(state, pass_io, ask, shown))


def summary_ask(
    session: Session,
    target: int,
    request: str,
    keep_turns: int,
    least: int,
    instructions: str | None = None,
) -> summary.SummaryAsk:
    policy, limit = session.policy, session.limit
    return summary.SummaryAsk(
        target=target,
        least=least,
        request=request,
        keep_turns=keep_turns,
        limit=limit,
        pin_budget=policy.user_words_share * limit / session.state.ratio,
        answered_chars=policy.answered_chars,
        allowance=min(summary.SUMMARY_ALLOWANCE, summary_budget(session)),
        instructions=instructions,
        label="Handoff" if policy.handoff else "Compacted",
        ledger_tokens=policy.ledger_size,
        handoff=policy.handoff,
        notes_tokens=policy.notes_size,
    )


def summary_budget(session: Session) -> int:
    """Tokens a summary may take: ``summary_max_tokens``, and at most ``SUMMARY_SHARE``
    of the limit, so that in a small window the summary cannot fill what the
    summarizing was meant to free."""
    limit = session.limit
    return max(100, min(session.policy.summary_max_tokens, int(SUMMARY_SHARE * limit)))


def summary_text(
    session: Session,
    messages: list[Message],
    request: str,
    instructions: str | None,
    previous: str | None,
    sent: list[Message] | None,
    readings: Readings,
) -> str:
    budget = summary_budget(session)
    return session.summaries.text(messages, instructions, previous, budget, sent, readings)


# -- when a summary comes --------------------------------------------------------------------
def summary_due(session: Session, target: int, high: float, request: str) -> bool:
    """After the clearing of a call that compacts: whether its summary should come now.
    A summary is lossy and costs a call, a clearing is neither, but every compaction
    rewrites history: each should buy as many turns as it can. So the summary comes with
    this clearing (whose rewrite is paid anyway) when the clearing alone would buy too
    few turns (``cadence.summary_due``)."""
    state, policy = session.state, session.policy
    if not target or state.measure() > high:
        return True  # a trigger by count asks for a summary; still over: no choice left
    ask = summary_ask(session, target, request, policy.keep_recent_turns, policy.clear_floor)
    after = summary.projected(state, ask)
    if after is None:
        return False
    return pays(state.measure(), after, high)


def pays(cleared: float, summarized: float, high: float, slack: float = 0.0) -> bool:
    """The rule of ``summary_due`` (``cadence.summary_due``) for a clearing to ``cleared``
    and a summary to ``summarized`` under ``high``; ``slack`` is added to the payoff share
    for a prediction."""
    return cadence.summary_due(high - cleared, high - summarized, slack)


# -- summaries made ahead (``ahead.py``) -----------------------------------------------------
def early_input(session: Session, mark: tuple[int, int], request: str) -> ahead.Early | None:
    """The range fixed ahead as it stands before this call's clearing: what its summary
    was asked for with, and the view from its start on (``ahead.early``)."""
    ask = summary_ask(session, 0, request, session.policy.keep_recent_turns, NEVER)
    chosen = summary.fixed(session.state, ask, *mark)
    if chosen is None:
        return None
    return ahead.early(session.state, session.policy, chosen)


def summarize_fixed(
    session: Session,
    mark: tuple[int, int],
    early: ahead.Early | None,
    target: int,
    request: str,
) -> bool:
    """The summary the trigger would make (``summary.plan``, after the clearing), its
    text the one asked for ahead of the range fixed at ``mark`` (``ahead.py``), what came
    after that range read off without a model; whether it was made. Not when the range no
    longer starts the plan, or the plan closes the turn or saves the first request's
    media (decided at the trigger, with a summary made there)."""
    state, policy = session.state, session.policy
    if early is None:
        return False
    least = 1 if state.measure() > session.limit else policy.clear_floor
    ask = summary_ask(session, target, request, policy.keep_recent_turns, least)
    chosen = summary.plan(state, ask)
    if chosen is None or chosen.closes or chosen.first_media or chosen.start != mark[0]:
        return False
    if chosen.cut < mark[1]:
        # The trigger would keep more than the range: the range, made ahead, frees more.
        fixed = summary.fixed(state, ask, *mark)
        if fixed is None:
            return False
        chosen = fixed
    budget, got, cut = summary_budget(session), early, chosen.cut
    summaries = session.summaries

    def text(
        _: list[Message],
        __: str,
        focus: str | None,
        previous: str | None,
        sent: list[Message] | None,
        readings: Readings,
    ) -> str:
        made = summaries.text(got.asked, focus, previous, budget, readings=readings)
        tail = got.view[mark[1] - mark[0] : cut - mark[0]]
        return summaries.capped(ahead.with_tail(made, tail, mark[1], budget, readings), budget)

    pass_io = passes.PassIO(session.store, io(session).index_name, text)
    seen = early.view[: cut - mark[0]]
    shown = policy.summary_input_limit // 4
    made = state.pinned.summaries
    guarded(
        session,
        lambda: take(
            session,
            "summarize",
            lambda: summary.edit(
                state, chosen, ask, passes.effects(state, pass_io, chosen, ask, shown, seen)
            ),
        ),
        "summarize",
    )
    return state.pinned.summaries > made


def summary_coming(session: Session, request: str) -> bool:
    """Whether the coming trigger will summarize, predicted by the rule it applies after
    its clearing (``summary_due``) on what that clearing would leave
    (``ahead.after_clearing``) and what its summary would (``ahead.after_summary``)."""
    state, policy, limit = session.state, session.policy, session.limit
    high = knobs.high_water(state, policy) * limit
    target = int(policy.low_water * limit)
    ask = summary_ask(session, target, request, policy.keep_recent_turns, policy.clear_floor)
    after = summary.projected(state, ask)
    if after is None:
        return False
    cleared = ahead.after_clearing(state, policy, limit)
    summarized = ahead.after_summary(state, policy, limit, after)
    return pays(cleared, summarized, high, ahead.SLACK)


def look_ahead(session: Session, request: str) -> None:
    """Past the soft mark, fix the next summary's range (journaled) and ask for its
    summary on the summarizer's worker, once per content of that range (``ahead.py``)."""
    state, policy, limit = session.state, session.policy, session.limit
    keep = policy.keep_recent_turns
    if policy.handoff:
        return  # no summarizer call to make ahead
    if state.ahead is None:
        if state.measure() <= ahead.soft_mark(state, policy, limit):
            return
        if ahead.calls_to_trigger(state, policy, limit) > ahead.LEAD:
            return
        if not summary_coming(session, request):
            return
        goal = ahead.target(state, policy, limit)
        ask = summary_ask(session, goal, request, keep, policy.clear_floor)
        mark = ahead.mark(state, ask)
        if mark is None:
            return
        session.record(mark)
    start, cut = state.ahead or (0, 0)
    chosen = summary.fixed(state, summary_ask(session, 0, request, keep, NEVER), start, cut)
    if chosen is None:
        return
    messages = ahead.summarizer_input(state, policy, chosen)
    if messages is None:
        return
    previous = state.pinned.summary_text if state.pinned.summary is not None else None
    summaries = session.summaries
    budget = summary_budget(session)
    summaries.ahead(summaries.request(copy_json(messages), None, previous, budget))


# -- over the limit --------------------------------------------------------------------------
def check_limit(session: Session) -> None:
    size, limit = session.state.measure(), session.limit
    if size <= limit:
        session.over_limit = 0
        return
    session.over_limit += 1
    too_big = limits.too_big(session.state, size, limit, session.over_limit)
    if session.over_limit >= session.policy.max_over_limit:
        raise CompactionFailed(too_big)
    # Never silently: the caller sees what is too big before the API refuses it.
    session.emit("over_limit", size, size, (), too_big)


def fixed_part(session: Session) -> None:
    error = limits.fixed_part_error(session.state, session.limit)
    if error is not None:
        raise CompactionFailed(error)
