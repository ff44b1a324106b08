"""How often earlier history is rewritten: the rules that make each compaction buy many turns.

Every compaction (a clearing, a summary) rewrites history from its oldest change on, and so
breaks the prompt cache; the turns it buys are the room it leaves under the high-water mark
over what a turn adds. DESIGN.md's target is a rewrite on under a tenth of turns, with as few
summaries (lossy, a model call each) as that allows. Two rules serve it:

- **The recent turns kept as far as they fit** (``recent_from``): a clearing leaves the
  results of the newest ``keep_recent_turns`` turns in view only as far as those turns fit
  under the low-water mark, the newest turn always (its results may be unseen). A few large
  results just read no longer hold a clearing far above the mark, the next compaction near.
  The summary keeps its recent turns by a like measure (``summary.plan``).
- **A summary only when the clearing alone buys too few turns** (``summary_due``): the
  summary comes with the clearing (whose rewrite is paid anyway) when the room the clearing
  leaves is under ``SUMMARY_PAYOFF`` of the room the summary would leave: the next
  compaction would come that much sooner, and would be the summary. Turns buy room at the
  session's own pace, so the rooms compare as turns. What no clearing takes (each cleared
  turn's call and placeholder) is carried on every request until a summary takes it: a
  summary put off for longer (while the clearing still buys some number of turns) saves
  summaries in a large window, but costs more in cache reads and writes than it saves
  (``docs/benchmarks.md``).

Both are pure functions of the state, so a resumed session decides as the live one did.
"""

from __future__ import annotations

from .policy import SessionPolicy
from .state import SessionState

SUMMARY_PAYOFF = 0.58
"""A clearing that leaves less than this share of the room under the high-water mark that a
summary would leave brings the summary along (measured on the synthetic sessions: 0.55 gave
more rewrites, 0.6 more summaries; ``docs/benchmarks.md``)."""


def recent_from(state: SessionState, policy: SessionPolicy, keep: int, coming: float = 0.0) -> int:
    """The first log position whose results a clearing leaves in view: the start of the
    oldest of the newest ``keep`` turns that, with every turn after it, fits under the
    low-water mark; the newest turn's start whatever its size; the end of the log with no
    turn, the first turn's start with ``keep`` 0. Never after the newest results the model
    has not seen.

    With ``coming`` tokens (measured) still to arrive before the clearing runs (a prediction,
    ``ahead.after_clearing``), those are the newest turn: a turn in the log is left alone only
    if it fits with them, and the end of the log is returned when none does."""
    starts = state.turn_starts()
    newest = state.last_assistant() + 1
    if not starts:
        return min(state.n, newest)
    if not keep:
        return min(starts[0], newest)
    recent = starts[-keep:]
    budget = (policy.low_water * policy.context_limit - coming) / state.ratio
    offset = len(state.prefix) - state.first_kept
    tokens = state.shown.tokens
    for start in recent if coming else recent[:-1]:
        if sum(tokens[offset + start :]) <= budget:
            return min(start, newest)
    return state.n if coming else min(recent[-1], newest)


def summary_due(room: float, summary_room: float, slack: float = 0.0) -> bool:
    """Whether a summary should come with the clearing that left ``room`` tokens under the
    high-water mark, a summary leaving ``summary_room`` (see the module docstring). The
    trigger applies it to what its clearing left; ``ahead.py`` to what it predicts, with
    ``slack`` added to the share."""
    return room < (SUMMARY_PAYOFF + slack) * summary_room


__all__ = ["SUMMARY_PAYOFF", "recent_from", "summary_due"]
