"""Summaries made ahead of need: the model call runs while the agent works, not at the trigger.

With a model summarizer the summary turn is the one turn the agent waits for (a model call
over the part being replaced). So once the request passes the soft mark (``soft_mark``:
halfway from the low-water mark to the high-water mark in force), the engine fixes the range
the next summary replaces (``mark``: an ``AheadMark`` in the journal) and asks for its summary
on the summarizer's worker (``summarizing.SummaryCaller.ahead``). At the trigger the summary of
that range comes first (``summary.fixed``): its answer is in already, or is waited for; what
arrived since the mark stays verbatim.

Invariants:

- The view is a function of the journal alone: which range a summary replaces is decided by
  the ``AheadMark`` record (a resumed session replays it), never by whether an answer is in.
  An answer made ahead is used only for a request with the same content key as the one the
  trigger makes (the range's messages as shown, the previous summary, the focus, the
  budget): given the same summarizer, it is the text the trigger would have got. A range
  that changed (a clearing in it, a summary since) gets a new request, never the old text.
- Nothing made ahead is journaled until it is applied: a process killed while a summary is
  in flight loses nothing; the resumed one asks again (or at the trigger).
- The summary lands at the trigger, not earlier: the prompt cache is broken when it was.
- Only with a model summarizer and ``summarize_ahead`` (``enabled``): the extractive
  summary is fast and stays at the trigger, the range the inline summary chooses.
- The summarizer is shown the range whole: a range too long for its input
  (``summary_input_limit``) is not asked for ahead (its cut names the archive, written at
  the trigger), and is summarized there.
"""

from __future__ import annotations

from typing import Any

from ..messages import Message
from ..summarize import extractive_summary
from . import knobs, summary
from .policy import SessionPolicy
from .records import AheadMark
from .state import SessionState

SOFT = 0.5
"""Where the soft mark lies between the low-water and the high-water mark."""


def enabled(policy: SessionPolicy, summarizer: Any) -> bool:
    """Whether summaries are made ahead: ``summarize_ahead`` and a model summarizer."""
    inner = getattr(summarizer, "summarizer", summarizer)
    return policy.summarize_ahead and inner is not extractive_summary


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


def mark(state: SessionState, ask: summary.SummaryAsk) -> AheadMark | None:
    """The range to fix now (``summary.plan`` for ``ask``), or ``None``: nothing worth a
    summary, or a summary that would close the turn or save the first request's media
    (those depend on what comes last, so they are decided at the trigger)."""
    chosen = summary.plan(state, ask)
    if chosen is None or chosen.closes or chosen.first_media:
        return None
    return AheadMark(chosen.start, chosen.cut)


def summarizer_input(
    state: SessionState, plan: summary.SummaryPlan, input_tokens: int
) -> list[Message] | None:
    """The messages the summary of ``plan`` shows the summarizer (as ``passes.effects``
    makes them), or ``None`` when they are over ``input_tokens`` (their cut names the
    archive, written only at the trigger)."""
    offset = len(state.prefix) - state.first_kept
    lo, hi = offset + plan.start, offset + plan.cut
    if sum(state.shown.tokens[lo:hi]) > input_tokens:
        return None
    older = [state.msgs[seq] for seq in plan.words.folded if seq < plan.start]
    return [*older, *state.view[lo:hi]]


__all__ = ["enabled", "mark", "soft_mark", "summarizer_input", "target"]
