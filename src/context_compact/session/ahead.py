"""Summaries made ahead of need: the model call runs while the agent works, not at the trigger.

With a model summarizer the summary turn is the one turn the agent waits for (a model call
over the part being replaced). The trigger clears first and summarizes only when the clearing
alone would buy too few turns (``planner.summary_due``). So once the request passes
the soft mark (``soft_mark``: halfway from the low-water mark to the high-water mark in
force), each call predicts the coming trigger with that same rule (``cadence.summary_due``
on ``after_clearing``, what its clearing would leave by the clearing's own fit rule, and
``after_summary``, what its summary would, the turns until it at the recent pace); only
when it will need a summary does the engine fix the range that summary replaces (``mark``:
an ``AheadMark`` in the journal) and ask for its summary on the summarizer's worker
(``summarizing.SummaryCaller.ahead``). At the trigger the clearing comes first, as always;
when the same rule then calls for a summary, it is the summary of that range
(``summary.fixed``) over the messages as the model last saw them (before this call's
clearing) but for the results that clearing takes, shown cleared as to a summary made at
the trigger (``unshown``; their full text cost 1.5-3x the summarizer's input), the text
asked for ahead: in already, or waited for. What came after that range, up to the cut the
trigger chose, is a note read off without a model (``with_tail``).

Invariants:

- The view is a function of the journal alone: which range a summary replaces is decided by
  the ``AheadMark`` record (a resumed session replays it), never by whether an answer is in.
  An answer made ahead is used only for a request with the same content key as the one the
  trigger makes (the range's messages as shown before the trigger's clearing, the results
  a clearing may take noted by size, the previous summary, the focus, the budget): given the
  same summarizer, it is the text the trigger would have got. A range that changed (a
  summary since, a provider's compaction) gets a new request, never the old text; a
  clearing drops the mark (``SessionState.apply``).
- Whether a trigger summarizes is the rule's answer on the state after its clearing, mark or
  no mark: made ahead, a session compacts (and rewrites history) as often as inline.
- Nothing made ahead is journaled until it is applied: a process killed while a summary is
  in flight loses nothing; the resumed one asks again (or at the trigger).
- The summary lands at the trigger, not earlier: the prompt cache is broken when it was.
- Only with a model summarizer (``enabled``: ``summarize_ahead`` None, the default, means
  ``summary.contract.is_model_summarizer``; False is off): the extractive summary is fast
  and stays at the trigger, the range the inline summary chooses.
- The summarizer is shown the range whole: a range too long for its input
  (``summary_input_limit``) is not asked for ahead (its cut names the archive, written at
  the trigger), and is summarized there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import markers
from ..messages import Block, Message, blocks, is_result, with_content
from ..summary.contract import Summarizes, is_model_summarizer
from ..summary.extract import extractive_summary
from ..summary.facts import Readings, facts
from . import cadence, clearing, knobs, passes, summary
from .policy import SessionPolicy
from .records import AheadMark
from .state import SessionState

SOFT = 0.5
"""Where the soft mark lies between the low-water and the high-water mark."""


def enabled(policy: SessionPolicy, summarizer: Summarizes) -> bool:
    """Whether summaries are made ahead: with a model summarizer, unless ``summarize_ahead``
    is False (None, the default, and True both mean on). Under the native tier only when
    asked (True): the provider makes the summary at the trigger, ours would go unused."""
    wanted = policy.summarize_ahead is True or (
        policy.summarize_ahead is None and not policy.native
    )
    return wanted and is_model_summarizer(summarizer)


def soft_mark(state: SessionState, policy: SessionPolicy, limit: int) -> float:
    """Tokens past which the next summary's range is fixed and its summary asked for."""
    high = knobs.high_water(state, policy) * limit
    low = policy.low_water * limit
    return low + SOFT * (high - low)


def target(state: SessionState, policy: SessionPolicy, limit: int) -> int:
    """The size to plan the range for: what the trigger would aim at (the low-water mark)
    less what the view will have grown by then, so that what arrives until the trigger
    (kept verbatim) does not leave the view at the soft mark again right after it."""
    high = knobs.high_water(state, policy) * limit
    return max(0, int(policy.low_water * limit - (high - state.measure())))


LEAD = 3
"""Calls before the trigger (at the recent pace) from which the summary is asked for ahead:
enough for a model call to finish while the agent works, few enough that what arrives after
the range fixed for it (kept verbatim, or cleared, by the trigger) stays small."""


def pace(state: SessionState, policy: SessionPolicy) -> tuple[int, float, float] | None:
    """Where the newest ``keep_recent_turns`` turns start, their tokens (measured) and their
    mean: the view's pace per call. ``None`` before there are that many."""
    keep = policy.keep_recent_turns
    if not keep or len(state.turn_starts()) < keep:
        return None
    recent_from = clearing.protect_from(state, keep)
    offset = len(state.prefix) - state.first_kept
    recent = sum(state.shown.tokens[offset + recent_from :]) * state.ratio
    return recent_from, recent, max(1.0, recent / keep)


def calls_to_trigger(state: SessionState, policy: SessionPolicy, limit: int) -> int:
    """Calls until the view passes the high-water mark, at its recent pace (at least 1)."""
    high = knobs.high_water(state, policy) * limit
    paced = pace(state, policy)
    if paced is None:
        return 1
    return max(1, math.ceil((high - state.measure()) / paced[2]))


KEPT = 0.35
"""The share of what arrives until the trigger that its summary is predicted to keep (the
newest turns, kept as far as they fit under the low-water mark). Measured on the synthetic
sessions (seeds 0-3, 12,500 tokens): none of it (the summary as if made now, too deep) gave
4-8 calls in vain per session, all of it 0-3 but a third of the summaries made at the
trigger; 0.35 gives 2-3 in vain, 11-13 of 12-13 summaries made ahead (with ``SLACK``)."""

SLACK = 0.01
"""Added to the rule's payoff share when predicting: a trigger predicted right at the rule's
line is taken to summarize (a call in vain if its clearing sufficed after all, rather than
a wait). Measured as ``KEPT``: 0 made 10 of 13 summaries ahead in
``benchmarks/summary_ahead.py``, 0.01 made 12; 0.02 and more gave 31 rewrites on a seed."""


def after_summary(state: SessionState, policy: SessionPolicy, limit: int, now: float) -> float:
    """The size the coming trigger's summary would leave, predicted from ``now`` (what it
    would leave made now, ``summary.projected``): what arrives until the trigger is the
    newest turns, which the summary keeps as far as they fit (``KEPT``)."""
    high = knobs.high_water(state, policy) * limit
    return now + KEPT * max(0.0, high - state.measure())


def after_clearing(state: SessionState, policy: SessionPolicy, limit: int) -> float:
    """The size the coming trigger's clearing would leave (``clearing.clear`` down to the
    low-water mark), predicted now: the view grows at the pace of its newest
    ``keep_recent_turns`` turns until it passes the high-water mark; the turns that are
    recent then are left alone, the rest of the seen results are cleared oldest first (a
    clearing freeing less than ``clear_at_least`` is skipped), the turns to come as far as
    the share of clearable results in the newest ones. Pure but for the count cache."""
    high = knobs.high_water(state, policy) * limit
    keep = policy.keep_recent_turns
    paced = pace(state, policy)
    if paced is None:
        return high  # no pace to go by: predict no clearing (a summary is then due)
    recent_from, recent, step = paced
    coming = calls_to_trigger(state, policy, limit)
    still_recent = max(0, keep - coming)
    stop = (
        cadence.recent_from(state, policy, still_recent, coming * step) if still_recent else state.n
    )
    old = state.results(state.first_kept, stop)
    freed = sum(c[2] for c in clearing.clearable(state, policy, old, False)) * state.ratio
    if coming > keep:
        fresh = state.results(recent_from, state.n)
        share = sum(c[2] for c in clearing.clearable(state, policy, fresh, False))
        freed += (coming - keep) * step * share * state.ratio / max(1.0, recent)
    freed = min(freed, high - policy.low_water * limit)
    return high if freed < policy.clear_floor * state.ratio else high - freed


def mark(state: SessionState, ask: summary.SummaryAsk) -> AheadMark | None:
    """The range to fix now (``summary.plan`` for ``ask``), or ``None``: nothing worth a
    summary, or a summary that would close the turn or save the first request's media
    (those depend on what comes last, so they are decided at the trigger)."""
    chosen = summary.plan(state, ask)
    if chosen is None or chosen.closes or chosen.first_media:
        return None
    return AheadMark(chosen.start, chosen.cut)


def shown_range(
    state: SessionState, plan: summary.SummaryPlan, input_tokens: int
) -> list[Message] | None:
    """The messages ``plan`` replaces as the view shows them now, or ``None`` when they are
    over ``input_tokens`` (the summarizer would be shown a cut naming the archive, written
    only at the trigger)."""
    offset = len(state.prefix) - state.first_kept
    lo, hi = offset + plan.start, offset + plan.cut
    if sum(state.shown.tokens[lo:hi]) > input_tokens:
        return None
    return state.view[lo:hi]


def summarizer_input(
    state: SessionState, policy: SessionPolicy, plan: summary.SummaryPlan
) -> list[Message] | None:
    """The messages the summary of ``plan`` shows the summarizer (as ``passes.effects``
    makes them): the folded user messages before it, then ``shown_range`` (over a quarter of
    ``summary_input_limit``: ``None``), the results in it that the trigger's clearing will
    take shown as cleared (``unshown``)."""
    shown = shown_range(state, plan, policy.summary_input_limit // 4)
    if shown is None:
        return None
    older = [state.msgs[seq] for seq in plan.words.folded if seq < plan.start]
    return [*older, *unshown(state, policy, plan, shown)]


def unshown(
    state: SessionState, policy: SessionPolicy, plan: summary.SummaryPlan, shown: list[Message]
) -> list[Message]:
    """``shown`` (the messages of ``plan``) with each result a clearing may take
    (``clearing.clearable``) replaced by a note of its size. Made at the trigger, the summary
    comes after the clearing and is shown those results cleared: made ahead it is shown the
    same, not their full text (which cost 1.5-3x the summarizer input, for a summary the
    trigger would have made without it). A pure function of the state, so the request made
    ahead and the one the trigger makes have the same content key."""
    results = state.results(plan.start, plan.cut)
    taken = {pos for pos, _, _ in clearing.clearable(state, policy, results, False)}
    out = list(shown)
    for seq in sorted({seq for seq, _ in taken}):
        message = out[seq - plan.start]
        content: list[Block] = [
            with_content(b, markers.result_cleared_with_summary(len(passes.text_of(b))))
            if (seq, i) in taken and is_result(b)
            else b
            for i, b in enumerate(blocks(message))
        ]
        out[seq - plan.start] = {**message, "content": content}
    return out


@dataclass(frozen=True)
class Early:
    """A range fixed ahead, at the trigger before its clearing."""

    asked: list[Message]
    """What its summary was asked for with (``summarizer_input``)."""
    view: list[Message]
    """The view from the range's start on, as the model last saw it."""


def early(state: SessionState, policy: SessionPolicy, plan: summary.SummaryPlan) -> Early | None:
    """The range ``plan`` fixed ahead as it stands (``Early``), or ``None`` when it was not
    asked for ahead (too long: ``summarizer_input``)."""
    asked = summarizer_input(state, policy, plan)
    if asked is None:
        return None
    offset = len(state.prefix) - state.first_kept
    return Early(asked, state.view[offset + plan.start :])


def with_tail(
    made: str, tail: list[Message], first: int, budget: int, readings: Readings | None = None
) -> str:
    """The summary made ahead, then what came after its range up to the trigger's cut (the
    messages from log position ``first`` on), read off them without a model (``readings``:
    the summary pass's, shared with its score): the next summary, made ahead again, rolls
    it in."""
    if not tail:
        return made
    note = markers.SUMMARY_SINCE.format(first=first, last=first + len(tail) - 1)
    # A few turns against the many the summary covers: a note, not a second summary.
    limit = max(200, min(len(made) // 8, 3 * budget))
    read = extractive_summary(tail, limit=limit, found=facts(tail, readings))
    return f"{made}\n\n{note}\n{read}"


__all__ = [
    "KEPT",
    "LEAD",
    "SLACK",
    "Early",
    "after_clearing",
    "after_summary",
    "calls_to_trigger",
    "early",
    "enabled",
    "mark",
    "pace",
    "shown_range",
    "soft_mark",
    "summarizer_input",
    "target",
    "unshown",
    "with_tail",
]
