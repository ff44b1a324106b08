"""How often earlier history is rewritten: the rules that make each compaction buy many turns.

Every compaction (a clearing, a summary) rewrites history from its oldest change on, and so
breaks the prompt cache; the turns it buys are the room it leaves under the high-water mark
over what a turn adds. DESIGN.md's target is a rewrite on under a tenth of turns, with as few
summaries (lossy, a model call each) as that allows. Two rules serve it:

- **The recent turns kept as far as they fit** (``recent_from``): a clearing leaves the
  results of the newest ``keep_recent_turns`` turns in view only as far as those turns fit
  under the low-water mark, the newest turn always (its results may be unseen). A few large
  results just read no longer hold a clearing far above the mark, the next compaction near.
  The summary keeps its recent turns by the same measure (``summary.plan``).
- **A summary only when the clearing alone buys too few turns** (``summary_due``): the
  summary comes with the clearing (whose rewrite is paid anyway) when the room the clearing
  leaves is under ``SUMMARY_PAYOFF`` of the room the summary would leave, unless that room
  holds ``ENOUGH_TURNS`` turns at the session's own pace (``pace``): then the clearing buys
  enough, and the summary waits for a later trigger. In a large window the residue of
  cleared turns (their calls and placeholders) grows for many clearings before it matters.

Both are pure functions of the state, so a resumed session decides as the live one did.
"""

from __future__ import annotations

from .policy import SessionPolicy
from .state import SessionState

SUMMARY_PAYOFF = 0.58
"""A clearing that leaves less than this share of the room under the high-water mark that a
summary would leave brings the summary along (measured on the synthetic sessions: 0.55 gave
more summaries, 0.6 more rewrites; ``docs/benchmarks.md``)."""

ENOUGH_TURNS = 8
"""A clearing whose room holds this many turns at the session's pace needs no summary. The
pace (``pace``) also counts the turns a clearing kept, so it runs a little high: 8 measured
turns are about 9 real ones, near the target of one rewrite in ten turns."""


def recent_from(state: SessionState, policy: SessionPolicy, keep: int) -> int:
    """The first log position whose results a clearing leaves in view: the start of the
    oldest of the newest ``keep`` turns that, with every turn after it, fits under the
    low-water mark; the newest turn's start whatever its size; the end of the log with no
    turn, the first turn's start with ``keep`` 0. Never after the newest results the model
    has not seen."""
    starts = state.turn_starts()
    newest = state.last_assistant() + 1
    if not starts:
        return min(state.n, newest)
    if not keep:
        return min(starts[0], newest)
    recent = starts[-keep:]
    budget = policy.low_water * policy.context_limit / state.ratio
    offset = len(state.prefix) - state.first_kept
    tokens = state.shown.tokens
    for start in recent[:-1]:
        if sum(tokens[offset + start :]) <= budget:
            return min(start, newest)
    return min(recent[-1], newest)


def pace(state: SessionState) -> float | None:
    """Tokens a turn adds, as the view shows it (calibrated): the turns in view after the
    newest cleared result or summary, over their count. ``None`` with fewer than two such
    turns: too few to tell. Measured before a clearing, they are the turns since the last
    compaction and those it kept."""
    cleared = max((seq for seq, _ in state.replaced.cleared), default=-1)
    frontier = max(cleared, state.first_kept - 1)
    starts = [seq for seq in state.turn_starts() if seq > frontier]
    if len(starts) < 2:
        return None
    offset = len(state.prefix) - state.first_kept
    return sum(state.shown.tokens[offset + starts[0] :]) * state.ratio / len(starts)


def summary_due(room: float, summary_room: float, turn: float | None) -> bool:
    """Whether a summary should come with the clearing that left ``room`` tokens under the
    high-water mark, a summary leaving ``summary_room``, at ``turn`` tokens a turn (``pace``,
    ``None``: unknown). See the module docstring."""
    if turn is not None and turn > 0 and room >= ENOUGH_TURNS * turn:
        return False
    return room < SUMMARY_PAYOFF * summary_room


__all__ = ["ENOUGH_TURNS", "SUMMARY_PAYOFF", "pace", "recent_from", "summary_due"]
