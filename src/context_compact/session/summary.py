"""A summary of the oldest turns, in three steps: a pure plan, the effects, a pure edit.

``plan`` decides *what* a summary replaces, from the state alone: the first message it takes
(``start``), the first it keeps (``cut``), which user messages stay pinned (``UserWords``)
and, when it closes the turn in progress, which recent steps ride along verbatim (``carry``).
``SummaryEffects`` is what the engine gets back from the store and the summarizer for that
plan (the archive, the media files, the summary text, the index). ``edit`` turns a plan and
its effects into the journal record that ``SessionState.apply`` applies. Only the effect step
does I/O; the plan and the edit are functions of their arguments, so a resumed session that
replays the record rebuilds the same view.

The plan is ``summary_plan.py``, the values passed between the steps ``summary_types.py``;
this module holds the edit and is where the engine and the passes reach all three.

Invariants: every message between ``start`` and ``cut`` is in the archive before the edit
exists; the edit names each folded user message (the newest ``FOLDED_NAMED`` one by one).
"""

from __future__ import annotations

from .. import markers
from ..messages import Message
from ..summary.extract import summary_score
from ..summary.facts import Readings, facts
from ..summary.transcript import steps as transcript_steps
from . import ledger_view
from .exports import Export, index_lines, summary_line
from .records import SummaryEdit
from .request import request_shown
from .state import SessionState
from .summary_plan import answered_text, fixed, plan, projected, summary_start, user_words
from .summary_types import SUMMARY_ALLOWANCE, SummaryAsk, SummaryEffects, SummaryPlan, UserWords

# The newest folded user messages a summary names one by one; older ones by count (the
# index names the archive of every message range).
FOLDED_NAMED = 20
# A carried result is verbatim: the transcript's clipping is turned off.
_VERBATIM = 10**12


def carried(state: SessionState, plan: SummaryPlan) -> Message | None:
    """The closing message: the steps that ride along, as the model saw them."""
    if plan.carry is None or plan.carry >= state.n:
        return None
    shown = transcript_steps(
        ((seq, state.render(seq)) for seq in range(plan.carry, state.n)), None, _VERBATIM
    )
    return markers.recent_steps(shown.text, shown.token, plan.carry, state.n - 1)


def edit(
    state: SessionState, plan: SummaryPlan, ask: SummaryAsk, effects: SummaryEffects
) -> SummaryEdit:
    """The journal record of ``plan`` carried out with ``effects``."""
    start, cut, words = plan.start, plan.cut, plan.words
    named = [
        *state.pinned.folded,
        *((seq, state.pinned.pin_archive.get(seq) or effects.archive) for seq in words.folded),
    ]
    more = state.pinned.folded_more + max(0, len(named) - FOLDED_NAMED)
    named = named[-FOLDED_NAMED:]
    held = effects.block is not None and effects.readable is not None
    message = markers.session_summary(
        ask.label,
        request_shown(state, ask.request, words.pins, cut),
        markers.native_held(str(effects.readable)) if held else effects.text,
        effects.archive,
        start,
        cut - 1,
        effects.index,
        markers.folded_line(named, more),
        summary_line(effects.exports, effects.archive),
        ledger_view.render(state.ledger, ask.ledger_tokens, effects.ledger),
        notes_shown(state, ask, effects.notes),
    )
    first = state.first_request
    pins = [seq for seq in (first, *words.pins) if seq is not None]
    # A closing plan ends the turn in progress with this summary (see the module docstring).
    return SummaryEdit(
        start=start,
        cut=cut,
        pins=tuple(dict.fromkeys(pins)),
        answered=dict(words.answered),
        folded=tuple((int(seq), str(path)) for seq, path in named),
        folded_more=more,
        archive=effects.archive,
        message=message,
        text=effects.text,
        score=effects.score,
        closes=plan.closes,
        carry=carried(state, plan) if plan.closes else None,
        first=effects.first,
        block=effects.block,
    )


def notes_shown(
    state: SessionState, ask: SummaryAsk, path: str | None
) -> tuple[list[tuple[int, int, str]], int, str] | None:
    """The notes a summary message carries: the newest that fit ``ask.notes_tokens``, how
    many older ones only the notes file ``path`` holds, and that path."""
    if path is None or not state.notes:
        return None
    shown, older = state.notes.shown(ask.notes_tokens * ledger_view.CHARS_PER_TOKEN)
    return shown, older, path


def index_entries(
    state: SessionState, plan: SummaryPlan, archive: str, exports: list[Export]
) -> list[str]:
    return [
        markers.index_line(
            "messages",
            archive,
            f"messages {plan.start}-{plan.cut - 1}, summary {state.pinned.summaries + 1}",
        ),
        *index_lines(exports, archive),
    ]


def score(text: str, source: list[Message], readings: Readings) -> dict[str, float | None]:
    return summary_score(text, source, found=facts(source, readings)).as_dict()


__all__ = [
    "FOLDED_NAMED",
    "SUMMARY_ALLOWANCE",
    "SummaryAsk",
    "SummaryEffects",
    "SummaryPlan",
    "UserWords",
    "answered_text",
    "carried",
    "edit",
    "fixed",
    "index_entries",
    "plan",
    "projected",
    "summary_start",
    "user_words",
]
