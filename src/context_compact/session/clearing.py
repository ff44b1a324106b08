"""The clear pass: seen results leave the view, each replaced by a marker naming its copy.

Over the high-water mark, the seen results outside the last ``keep_recent_turns`` turns (as
far as those fit under the low-water mark: ``cadence.recent_from``) are cleared oldest first,
down to the low-water mark, and only when that frees at least ``clear_at_least`` tokens (a
tenth of a small window) unless forced. With ``futile_below`` it clears nothing when clearing
everything would still leave the view over that mark: the summary that must follow would
archive what it cleared.

The copies come first, as in every pass: a result without a copy yet is written before the
edit exists, into one pack file at a line range shared by the results cleared together, so a
clearing writes one file however many results it clears (a text holding a line break other
than ``\\n``, which ``read_file`` could not address by lines, gets a file of its own); each
copy is listed in the session's index, and the calls' inputs cleared with their results
(``clear_tool_inputs``) are copied likewise (``knobs.cleared_inputs``).

What a clearing would free is known before any copy is written (``clearable``, pure but for
the count cache): ``ahead.py`` predicts the trigger's clearing with it.
"""

from __future__ import annotations

from .. import markers
from ..messages import Block, readable_text
from . import cadence, knobs
from .passes import PassIO, describe, text_of
from .policy import SessionPolicy
from .records import BlockCopy, BlockEdit
from .state import Pos, SessionState

MARKER_TOKENS = 30
# Line breaks other than \n: str.splitlines (and so read_file) counts them, a pack's line
# ranges would drift.
_ASCII_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e"
_OTHER_BREAKS = "\x85\u2028\u2029"


def odd_breaks(text: str) -> bool:
    """Whether ``text`` holds a line break other than ``\\n`` (``in`` scans at C speed)."""
    if any(c in text for c in _ASCII_BREAKS):
        return True
    return not text.isascii() and any(c in text for c in _OTHER_BREAKS)


def clear(
    state: SessionState,
    policy: SessionPolicy,
    io: PassIO,
    target: int,
    force: bool,
    futile_below: int | None = None,
    last_resort: bool = False,
) -> BlockEdit | None:
    # Over the limit with nothing else left, only the newest turn's results are protected.
    keep = 1 if last_resort else policy.keep_recent_turns
    # Nothing before a thinking block the model checks and the turn in progress opens with
    # may change (``thinking.py``): only the results after it are cleared.
    wall = state.wall()
    start = state.first_kept if wall is None else wall + 1
    results = state.results(start, cadence.recent_from(state, policy, keep))
    if futile_below is not None and _futile_anyway(state, results, futile_below):
        return None
    candidates = clearable(state, policy, results, force or last_resort)
    excess = (state.measure() - target) / state.ratio
    if futile_below is not None:
        # Clearing everything would still leave the view over this mark: a summary must
        # follow anyway, and would archive what we cleared. Leave it to the summary.
        reachable = state.measure() - sum(item[2] for item in candidates) * state.ratio
        if reachable > futile_below:
            return None
    chosen, freed = [], 0
    for item in candidates:
        if freed >= excess:
            break
        chosen.append(item)
        freed += item[2]
    if not chosen or (freed < policy.clear_floor and not force):
        return None
    # Results without a copy yet go into one pack file, each at a line range, so a clearing
    # writes one file however many results it clears (those that read_file could not
    # address by lines get files of their own).
    packed: dict[Pos, tuple[int, int]] = {}
    pieces: list[str] = []
    line = 1
    for pos, block, _ in chosen:
        text = text_of(block)
        if pos in state.replaced.copies or not text or odd_breaks(text):
            continue
        # The text and its line end are separate pieces: a store that keeps texts by hash
        # then holds the text once for the log and the pack.
        ending = [] if text.endswith("\n") else ["\n"]
        count = text.count("\n") + len(ending)
        packed[pos] = (line, line + count - 1)
        pieces += [text, *ending]
        line += count
    pack = io.store.save_pack(pieces) if len(packed) > 1 else None
    edits: list[BlockCopy] = []
    index: list[str] = []
    for pos, block, _ in chosen:
        original = text_of(block)
        path = state.replaced.copies.get(pos)
        lines = packed.get(pos) if pack is not None else None
        if path is None:
            path = pack if pack is not None and lines is not None else io.store.save_blob(original)
            where = f"{path} lines {lines[0]}-{lines[1]}" if lines else path
            index.append(markers.index_line("result", where, describe(state, pos)))
        marker = knobs.cleared_text(policy, path, len(original), lines)
        edits.append(BlockCopy(pos[0], pos[1], path, marker))
    inputs, more = knobs.cleared_inputs(state, policy, io.store, [p for p, _, _ in chosen])
    if index or more:
        io.index(index + more)
    return BlockEdit("clear", tuple(edits), inputs)


def protect_from(state: SessionState, keep: int) -> int:
    """The start of the newest ``keep`` turns, never after the results the model has not
    seen: the recent turns by count (``ahead.py`` paces by them; a clearing keeps them only
    as far as they fit, ``cadence.recent_from``)."""
    starts = state.turn_starts()
    first = starts[-keep] if keep and len(starts) >= keep else (starts[0] if starts else state.n)
    return min(first, state.last_assistant() + 1)


Candidate = tuple[Pos, Block, int]


def clearable(
    state: SessionState,
    policy: SessionPolicy,
    results: list[tuple[Pos, Block]],
    force: bool,
) -> list[Candidate]:
    """Of ``results``, oldest first, those a clearing may take, each with the tokens it
    would free. Pure but for the count cache: what a clearing would free is known before
    any copy is written (``ahead.py`` predicts the trigger's clearing with it)."""
    candidates = []
    keep_result = knobs.protected(state, policy, force)
    # Each result's text is counted once while it stays the same (a clearing runs often in a
    # large window: recounting every result each time was most of its cost).
    sizes = state.result_sizes
    for pos, block in results:
        if pos in state.replaced.cleared or readable_text(block) is None or keep_result(pos):
            continue
        current = text_of(state.replaced.blocks.get(pos, block))
        known = sizes.get(pos)
        if known is None or known[0] != current:
            known = sizes[pos] = (current, state.counter.text(current))
        saving = known[1] - MARKER_TOKENS
        if saving > 0:
            candidates.append((pos, block, saving))
    return candidates


def _futile_anyway(state: SessionState, results: list[tuple[Pos, Block]], mark: int) -> bool:
    """Whether the view stays over ``mark`` even if every message holding one of ``results``
    shrank to nothing: the counts the view already keeps decide it, so a cold start on a long
    history does not size each of its results only to find clearing futile."""
    holders = {seq for (seq, _), _ in results}
    shrinkable = sum(state.shown.tokens[state.view_index(seq)] for seq in holders)
    return state.measure() - shrinkable * state.ratio > mark


__all__ = ["MARKER_TOKENS", "Candidate", "clear", "clearable", "odd_breaks", "protect_from"]
