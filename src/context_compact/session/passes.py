"""The session engine's passes: each decides one edit, as data, after writing its copies.

In order of cost to the prompt cache:

1. ``persist``: new results the model has not seen are budgeted as they arrive
   (``batch_budget`` of the limit; any result over the large-result cap): the full text is
   saved and the block becomes a preview naming the file. New text only: seen history is
   never rewritten by this pass.
2. ``clear``: over the high-water mark, seen results outside the last ``keep_recent_turns``
   turns are cleared oldest first, down to the low-water mark, and only when that frees at
   least ``clear_at_least`` tokens; each names its saved copy.
3. ``summarize``: still over the low-water mark, the oldest turns are archived and replaced
   by one summary message (rolling: the previous summary is passed in to be updated), the
   recent turns kept verbatim. The user's own messages stay pinned in view, verbatim and in
   order (``user_words``): the first request always, then the newest within the policy's
   ``user_words_share``, the newest of all whatever its size; the oldest past that budget are
   folded into the summary, which names each (message number and archive). Images and
   documents leaving the view are saved as files of their own (``exports.py``) and named in
   the summary and the index. The current request is stated in full only when no user
   message in view holds it verbatim (or it is shorter than a reference); else the summary
   points at that message. The edit carries the summary's ``summary_score`` against what it
   was given.

A pass returns ``None`` (nothing worth doing) or an edit record; it never changes the state
itself. Every path it puts in an edit was returned by the store *before* the edit exists,
and is listed in the session's index file, so anything that leaves the view stays at most two
reads away: its own marker, or the summary's index, name it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .. import markers
from ..extract import summary_score
from ..invariants import thinking_kept
from ..messages import Message, block_type, blocks, is_request, readable_text, result_text
from ..policy import SessionPolicy
from ..store.base import Store
from . import knobs
from .exports import export_media, index_lines, summary_line
from .request import request_shown
from .state import Pos, Record, SessionState, answer_message

# Tokens we expect a summary message to take (the summary call is capped at 2,000).
SUMMARY_ALLOWANCE = 800
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


@dataclass
class PassIO:
    """What passes may touch: the store, the session's index file and the summarizer."""

    store: Store
    index_name: str
    summarize: Callable[[list[Message], str, str | None, str | None], str]

    def index(self, lines: list[str]) -> str:
        return self.store.append_file(self.index_name, "".join(lines))


def text_of(block: dict[str, object]) -> str:
    """What a result's copy holds: its readable text (text blocks joined, not a Python repr)."""
    text = readable_text(block)
    return text if text is not None else result_text(block)


def describe(state: SessionState, pos: Pos) -> str:
    """One line naming a result: its tool, input and first words."""
    seq, bi = pos
    block = state.msgs[seq]["content"][bi]
    use = None
    if seq - 1 in state.msgs:
        use = next(
            (
                b
                for b in blocks(state.msgs[seq - 1])
                if block_type(b) == "tool_use" and b.get("id") == block.get("tool_use_id")
            ),
            None,
        )
    tool = f"{use.get('name')} {str(use.get('input'))[:80]}" if use else "tool result"
    head = " ".join(text_of(block)[:400].split())[:80]
    return f"message {seq}, {tool} -> {head}"


def persist(state: SessionState, policy: SessionPolicy, io: PassIO, limit: int) -> Record | None:
    # Results holding images or documents stay whole: they cannot become a text preview.
    unseen = [
        (pos, block)
        for pos, block in state.results(state.last_assistant() + 1, state.n)
        if pos not in state.repl and readable_text(block) is not None
    ]
    if not unseen:
        return None
    counter = state.counter
    texts = {pos: text_of(block) for pos, block in unseen}
    sizes = {pos: counter.text(text) for pos, text in texts.items()}
    total = sum(sizes.values())
    batch_limit = int(policy.batch_budget * limit)
    cap = min(policy.large_result_limit, int(policy.large_result_share * limit))
    chosen, lines = [], []
    for pos, _ in sorted(unseen, key=lambda item: sizes[item[0]], reverse=True):
        text = texts[pos]
        if sizes[pos] <= cap and total <= batch_limit:
            continue
        if len(text) <= policy.preview_chars * 2:
            continue
        path = io.store.save_blob(text)
        preview = markers.persisted_preview(path, text, policy.preview_chars)
        chosen.append([pos[0], pos[1], path, preview])
        lines.append(markers.index_line("result", path, describe(state, pos)))
        total += counter.text(preview) - sizes[pos]
    if not chosen:
        return None
    io.index(lines)
    return {"kind": "edit", "op": "persist", "blocks": chosen}


def clear(
    state: SessionState,
    policy: SessionPolicy,
    io: PassIO,
    target: int,
    force: bool,
    futile_below: int | None = None,
    last_resort: bool = False,
) -> Record | None:
    starts = state.turn_starts()
    # Over the limit with nothing else left, only the newest turn's results are protected.
    keep = 1 if last_resort else policy.keep_recent_turns
    protect_from = (
        starts[-keep] if keep and len(starts) >= keep else (starts[0] if starts else state.n)
    )
    protect_from = min(protect_from, state.last_assistant() + 1)
    candidates = []
    keep_result = knobs.protected(state, policy, force or last_resort)
    for pos, block in state.results(state.first_kept, protect_from):
        if pos in state.cleared or readable_text(block) is None or keep_result(pos):
            continue
        current = text_of(state.repl.get(pos, block))
        saving = state.counter.text(current) - MARKER_TOKENS
        if saving > 0:
            candidates.append((pos, block, saving))
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
    if not chosen or (freed < policy.clear_at_least and not force):
        return None
    # Results without a copy yet go into one pack file, each at a line range, so a clearing
    # writes one file however many results it clears (those that read_file could not
    # address by lines get files of their own).
    packed: dict[Pos, tuple[int, int]] = {}
    pieces: list[str] = []
    line = 1
    for pos, block, _ in chosen:
        text = text_of(block)
        if pos in state.copies or not text or odd_breaks(text):
            continue
        # The text and its line end are separate pieces: a store that keeps texts by hash
        # then holds the text once for the log and the pack.
        ending = [] if text.endswith("\n") else ["\n"]
        count = text.count("\n") + len(ending)
        packed[pos] = (line, line + count - 1)
        pieces += [text, *ending]
        line += count
    pack = io.store.save_pack(pieces) if len(packed) > 1 else None
    edits, index = [], []
    for pos, block, _ in chosen:
        original = text_of(block)
        path = state.copies.get(pos)
        lines = packed.get(pos) if pack is not None else None
        if path is None:
            path = pack if pack is not None and lines is not None else io.store.save_blob(original)
            where = f"{path} lines {lines[0]}-{lines[1]}" if lines else path
            index.append(markers.index_line("result", where, describe(state, pos)))
        marker = knobs.cleared_text(policy, path, len(original), lines)
        edits.append([pos[0], pos[1], path, marker])
    if index:
        io.index(index)
    return {"kind": "edit", "op": "clear", "blocks": edits}


@dataclass(frozen=True)
class UserWords:
    """The user messages a summary up to some cut keeps in view, and those it folds in."""

    pins: list[int]
    answered: dict[int, str]
    folded: list[int]
    tokens: int


def answered_text(state: SessionState, seq: int, longest: int) -> str | None:
    """The text of the assistant message just before ``seq``, if it is one, has no tool call
    and is at most ``longest`` characters: what the user was answering."""
    before = state.msgs.get(seq - 1)
    if before is None or before.get("role") != "assistant":
        return None
    if any(block_type(b) == "tool_use" for b in blocks(before)):
        return None
    text = "\n\n".join(
        str(b.get("text", "")) for b in blocks(before) if block_type(b) == "text"
    ).strip()
    if isinstance(before.get("content"), str):
        text = str(before["content"]).strip()
    return text if 0 < len(text) <= longest else None


def user_words(state: SessionState, start: int, cut: int, budget: float, longest: int) -> UserWords:
    """Every user-authored message before ``cut`` (besides the first request, always kept)
    stays pinned, newest first, while the pinned ones fit ``budget`` tokens; the newest of
    all stays whatever its size; the rest (the oldest) are folded into the summary."""
    first = state.first_request
    old = [seq for seq in state.pins if seq != first and seq < start]
    new = [seq for seq in range(start, cut) if seq != first and is_request(state.msgs[seq])]
    answered: dict[int, str] = {}
    cost: dict[int, int] = {}
    for seq in [*old, *new]:
        text = state.answered.get(seq) if seq < start else answered_text(state, seq, longest)
        if text:
            answered[seq] = text
        cost[seq] = state.counter.count(state.msgs[seq]) + (
            state.counter.count(answer_message(text)) if text else 0
        )
    pins: list[int] = []
    used = 0
    for seq in reversed([*old, *new]):
        if seq != state.latest_request and used + cost[seq] > budget:
            break
        pins.append(seq)
        used += cost[seq]
    kept = set(pins)
    return UserWords(
        pins=pins[::-1],
        answered={seq: text for seq, text in answered.items() if seq in kept},
        folded=[seq for seq in [*old, *new] if seq not in kept],
        tokens=used,
    )


# The newest folded user messages a summary names one by one; older ones by count (the
# index names the archive of every message range).
FOLDED_NAMED = 20


def summarize(
    state: SessionState,
    io: PassIO,
    *,
    target: int,
    least: int,
    request: str,
    keep_turns: int,
    input_tokens: int,
    pin_budget: float,
    answered_chars: int,
    instructions: str | None = None,
    label: str = "Compacted",
) -> Record | None:
    starts = [seq for seq in state.turn_starts() if state.legal_cut(seq)]
    # The newest turn (the model's latest call and its unseen results) is never summarized.
    candidates = [
        c for c in (starts[-keep_turns:] if keep_turns else starts[-1:]) if c > state.first_kept
    ]
    if not candidates:
        candidates = [c for c in starts[-1:] if c > state.first_kept]
    if not candidates:
        return None
    first = state.first_request
    start = max(state.first_kept, state.base + (1 if first is not None else 0))
    offset = len(state.prefix) - state.first_kept

    def tokens(lo: int, hi: int) -> int:  # of log messages lo..hi-1, all at or after first_kept
        return sum(state.tokens[offset + lo : offset + hi])

    first_tokens = state.counter.count(state.msgs[first]) if first is not None else 0
    budget = target / state.ratio - state.overhead - SUMMARY_ALLOWANCE - first_tokens
    cut = candidates[0]
    for c in candidates:  # drop more only while what stays is still too big
        cut = c
        words = user_words(state, start, c, pin_budget, answered_chars)
        if tokens(c, state.n) + words.tokens <= budget:
            break
    moved = _thinking_cut(state, cut, starts)
    if moved <= start:
        return None
    if moved != cut:
        # The pins were chosen for the cut before it moved back to a thinking turn's start.
        cut, words = moved, user_words(state, start, moved, pin_budget, answered_chars)
    # What the prefix holds now besides the first request (the summary, pinned messages).
    prefix_rest = sum(state.tokens[: len(state.prefix)]) - (
        first_tokens if state.prefix and first is not None else 0
    )
    saving = tokens(start, cut) + prefix_rest - SUMMARY_ALLOWANCE - words.tokens
    if saving < least:
        # Summarizing so little would not shrink the view: it would only churn the cache.
        return None
    dropped = state.view[offset + start : offset + cut]
    archive = io.store.save_messages(dropped)
    sizes = state.tokens[offset + start : offset + cut]
    shown = summary_view(dropped, sizes, input_tokens, archive)
    # Pinned messages stay in view verbatim: the summary need not hold them. Folded ones
    # pinned by an earlier summary are shown again, so this summary takes them in.
    kept = {id(dropped[seq - start]) for seq in words.pins if seq >= start}
    older = [state.msgs[seq] for seq in words.folded if seq < start]
    # Images and documents leaving the view become files of their own (before the edit).
    exports = export_media(
        io.store,
        [
            *((seq, state.msgs[seq]) for seq in words.folded if seq < start),
            *((start + i, m) for i, m in enumerate(dropped) if id(m) not in kept),
        ],
    )
    source = [*older, *(m for m in shown if id(m) not in kept)]
    previous = state.summary_text if state.summary is not None else None
    text = io.summarize([*older, *shown], request, instructions, previous)
    index = io.index(
        [
            markers.index_line(
                "messages", archive, f"messages {start}-{cut - 1}, summary {state.summaries + 1}"
            ),
            *index_lines(exports, archive),
        ]
    )
    named = [
        *state.folded,
        *((seq, state.pin_archive.get(seq) or archive) for seq in words.folded),
    ]
    more = state.folded_more + max(0, len(named) - FOLDED_NAMED)
    named = named[-FOLDED_NAMED:]
    message = markers.session_summary(
        label,
        request_shown(state, request, words.pins, cut),
        text,
        archive,
        start,
        cut - 1,
        index,
        markers.folded_line(named, more),
        summary_line(exports, archive),
    )
    pins = [seq for seq in (first, *words.pins) if seq is not None]
    return {
        "kind": "edit",
        "op": "summarize",
        "start": start,
        "cut": cut,
        "pins": list(dict.fromkeys(pins)),
        "answered": {str(seq): t for seq, t in words.answered.items()},
        "folded": [list(item) for item in named],
        "folded_more": more,
        "archive": archive,
        "message": message,
        "text": text,
        "score": summary_score(text, source).as_dict(),
    }


def _thinking_cut(state: SessionState, cut: int, starts: list[int]) -> int:
    """``cut``, or the nearest earlier turn start, such that the view the summary makes still
    opens its turn in progress with the thinking block the current view opens it with. The
    API merges consecutive user messages, so the summary and the pinned requests in front of
    the kept part can join the run before it: the log's own turns are not enough to decide."""
    first, latest = state.first_request, state.latest_request
    offset = len(state.prefix) - state.first_kept

    def keeps(c: int) -> bool:
        pinned = latest is not None and latest != first and latest < c
        head = [state.msgs[first]] if first is not None else []
        head.append({"role": "user", "content": ""})
        if pinned and latest is not None:
            head.append(state.msgs[latest])
        return thinking_kept(state.view, head + state.view[offset + c :])

    for c in [cut, *sorted((s for s in starts if s < cut), reverse=True)]:
        if keeps(c):
            return c
    return state.first_kept


def summary_view(
    messages: list[Message], sizes: list[int], budget: int, archive: str
) -> list[Message]:
    """What the summarizer is shown of ``messages``: all of them if they fit ``budget``
    tokens, else the first quarter and the last three quarters of the budget (S-4.2's cut,
    made between whole messages) around one message naming the archive that holds the rest.
    A model could not read more; serializing all of a long history only to cut it is what
    made a cold start on 20,000 messages slow."""
    if sum(sizes) <= budget:
        return messages
    head, used = 0, 0
    while head < len(messages) and used + sizes[head] <= budget // 4:
        used += sizes[head]
        head += 1
    tail, used = len(messages), 0
    while tail > head and used + sizes[tail - 1] <= budget - budget // 4:
        used += sizes[tail - 1]
        tail -= 1
    gap = {"role": "user", "content": markers.summary_gap(tail - head, archive)}
    return [*messages[:head], gap, *messages[tail:]]


__all__ = [
    "PassIO",
    "UserWords",
    "clear",
    "describe",
    "persist",
    "summarize",
    "summary_view",
    "user_words",
]
