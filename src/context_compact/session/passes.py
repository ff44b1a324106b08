"""The session engine's passes: each decides one edit, as data, after writing its copies.

In order of cost to the prompt cache:

1. ``persist``: new results the model has not seen are budgeted as they arrive
   (``batch_budget`` of the limit; any result over the large-result cap): the full text is
   saved and the block becomes a preview naming the file. New text only: seen history is
   never rewritten by this pass.
2. ``clear`` (``clearing.py``): over the high-water mark, seen results outside the last
   ``keep_recent_turns`` turns (as far as those fit under the low-water mark:
   ``cadence.recent_from``) are cleared oldest first, down to the low-water mark, and only
   when that frees at least ``clear_at_least`` tokens (a tenth of a small window); each names
   its saved copy.
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
from ..messages import (
    Block,
    Message,
    block_at,
    block_type,
    blocks,
    clone,
    readable_text,
    result_text,
)
from ..store.base import Store
from ..store.codec import EncodedMessages
from ..summary import prompts
from ..summary.extract import extractive_summary
from ..summary.facts import Readings, facts
from . import attribution, ledger_view, readback, summary
from .exports import export_media, without_media
from .native_tier import SUMMARY_CHARS
from .policy import SessionPolicy
from .records import BlockCopy, BlockEdit, NativeEdit, SummaryEdit
from .state import Pos, SessionState

Score = dict[str, float | None] | None
Sizes = dict[Pos, tuple[str, int]]
"""Tokens of results' texts by position, with the text each was counted on."""


@dataclass
class PassIO:
    """What passes may touch: the store, the session's index file and the summarizer."""

    store: Store
    index_name: str
    summarize: Callable[
        [list[Message], str, str | None, str | None, list[Message] | None, Readings], str
    ]
    """``(messages, request, instructions, previous, sent, readings)``: the summary's text;
    ``sent``, the view's messages before the cut (None: not known); ``readings``, what the
    summary's facts read, for the summarizer to share with the score."""
    native: Callable[[list[Message]], Block | None] | None = None
    """The provider's compaction of the view's messages before a summary's cut (a block),
    None when it failed (``native_tier.py``); absent: our own summary only."""

    def index(self, lines: list[str]) -> str:
        return self.store.append_file(self.index_name, "".join(lines))


def text_of(block: Block) -> str:
    """What a result's copy holds: its readable text (text blocks joined, not a Python repr)."""
    text = readable_text(block)
    return text if text is not None else result_text(block)


def describe(state: SessionState, pos: Pos) -> str:
    """One line naming a result: its tool, input and first words."""
    seq, bi = pos
    block = block_at(state.msgs[seq], bi)
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


def persist(
    state: SessionState, policy: SessionPolicy, io: PassIO, limit: int
) -> tuple[BlockEdit | None, Sizes]:
    """The edit that persists the newest unseen results too large to send (None: none is),
    and the sizes counted on the way, each with the text it was counted on (the result's,
    or its preview's): the engine keeps them in ``state.result_sizes`` once the edit is
    recorded, so a later clearing need not count these texts again."""
    # Results holding images or documents stay whole: they cannot become a text preview.
    unseen = [
        (pos, block)
        for pos, block in state.results(state.last_assistant() + 1, state.n)
        if pos not in state.replaced.blocks and readable_text(block) is not None
    ]
    if not unseen:
        return None, {}
    counter = state.counter
    texts = {pos: text_of(block) for pos, block in unseen}
    sizes = {pos: counter.text(text) for pos, text in texts.items()}
    counted: Sizes = {pos: (texts[pos], size) for pos, size in sizes.items()}
    total = sum(sizes.values())
    batch_limit = int(policy.batch_budget * limit)
    cap = min(policy.large_result_limit, int(policy.large_result_share * limit))
    chosen: list[BlockCopy] = []
    lines: list[str] = []
    for pos, _ in sorted(unseen, key=lambda item: sizes[item[0]], reverse=True):
        text = texts[pos]
        if sizes[pos] <= cap and total <= batch_limit:
            continue
        if len(text) <= policy.preview_size * 2:
            continue
        whole = readback.persisted_path(io.store, text)
        if whole is not None and readback.named_before(state.view, state.view_index(pos[0]), whole):
            # A file we persisted, read back whole: a page of it, never its own marker again.
            page_chars = max(policy.preview_size, int(len(text) * cap / sizes[pos] * 0.9))
            preview = readback.page(io.store, whole, text, page_chars, policy.preview_size)
            chosen.append(BlockCopy(pos[0], pos[1], whole, preview))
        else:
            path = io.store.save_blob(text)
            preview = markers.persisted_preview(path, text, policy.preview_size)
            chosen.append(BlockCopy(pos[0], pos[1], path, preview))
            lines.append(markers.index_line("result", path, describe(state, pos)))
        shown = counter.text(preview)
        counted[pos] = (preview, shown)
        total += shown - sizes[pos]
    if not chosen:
        return None, counted
    if lines:
        io.index(lines)
    return BlockEdit("persist", tuple(chosen)), counted


def summarize(
    state: SessionState, io: PassIO, ask: summary.SummaryAsk, input_tokens: int
) -> SummaryEdit | None:
    """The summary pass: ``summary.plan``, its copies and the summarizer's text
    (``effects``), then ``summary.edit``."""
    chosen = summary.plan(state, ask)
    if chosen is None:
        return None
    return summary.edit(state, chosen, ask, effects(state, io, chosen, ask, input_tokens))


def effects(
    state: SessionState,
    io: PassIO,
    plan: summary.SummaryPlan,
    ask: summary.SummaryAsk,
    input_tokens: int,
    seen: list[Message] | None = None,
) -> summary.SummaryEffects:
    """Everything a summary writes or asks for, in this order: the archive of the messages it
    replaces, their images and documents as files, the summary text, the index lines.
    ``seen``: those messages as the model last saw them, when the call cleared some of them
    first (a range fixed ahead, ``ahead.py``); the view's otherwise."""
    start, cut, words = plan.start, plan.cut, plan.words
    offset = len(state.prefix) - state.first_kept
    sizes = state.shown.tokens[offset + start : offset + cut]
    if seen is None:
        dropped = state.view[offset + start : offset + cut]
        contents = state.shown.texts[offset + start : offset + cut]
        archive = io.store.save_messages(EncodedMessages(dropped, contents))
    else:
        dropped = seen
        archive = io.store.save_messages(seen)
    shown = summary_view(dropped, sizes, input_tokens, archive)
    # Pinned messages stay in view verbatim: the summary need not hold them. Folded ones
    # pinned by an earlier summary are shown again, so this summary takes them in.
    kept = {id(dropped[seq - start]) for seq in words.pins if seq >= start}
    older = [state.msgs[seq] for seq in words.folded if seq < start]
    exports = export_media(
        io.store,
        [
            *((seq, state.msgs[seq]) for seq in words.folded if seq < start),
            *((start + i, m) for i, m in enumerate(dropped) if id(m) not in kept),
        ],
    )
    first = None
    if plan.first_media and state.first_request is not None:
        # Its images alone keep the request over the limit: saved as files, named in place.
        seq = state.first_request
        saved = export_media(io.store, [(seq, state.msgs[seq])])
        first = without_media(state.render(seq), seq, saved)
        exports = [*saved, *exports]
    source = [*older, *(m for m in shown if id(m) not in kept)]
    previous = state.pinned.summary_text if state.pinned.summary is not None else None
    native = io.native if not ask.handoff else None
    block = native([clone(m) for m in state.view[: offset + cut]]) if native else None
    readable = None
    # The summarizer (an extractive one) and the score read the same messages: each once.
    readings = Readings()
    asked = [*older, *shown]
    if ask.handoff:  # no summarizer call: the message says where everything is
        text = markers.HANDOFF
    elif block is None:
        sent = state.view[: offset + cut]  # copied by the summary caller if it wants it
        text = io.summarize(asked, ask.request, ask.instructions, previous, sent, readings)
    else:  # the block holds the summary; ours, readable, is kept beside it
        found = facts(asked, readings)
        text = extractive_summary(asked, ask.request, SUMMARY_CHARS, previous, found=found)
    text = text if ask.handoff else checked(state, text, ask.request, previous)
    score = summary.score(text, source, readings)
    entries = summary.index_entries(state, plan, archive, exports)
    notes = None
    if state.notes and ask.notes_tokens:
        # The whole notes, content-addressed: the view names it, beside the newest shown.
        notes = io.store.save_blob(state.notes.file_text())
        newest = state.notes.items[-1][0]
        what = f"{len(state.notes)} notes of the agent's, the newest in message {newest}"
        entries.append(markers.index_line("notes", notes, what))
    whole = None
    if state.ledger and ask.ledger_tokens:
        # The whole ledger: the view names the newest files changed, and this file for all.
        whole = io.store.save_blob(ledger_view.full(state.ledger, detail=True) + "\n")
        what = f"the ledger: {len(state.ledger.changed)} files changed, every file read"
        entries.append(markers.index_line("ledger", whole, what))
    if block is not None:
        readable = io.store.save_blob(text)
        what = f"readable summary of messages {start}-{cut - 1} (a compaction block holds them)"
        entries.append(markers.index_line("summary", readable, what))
    index = io.index(entries)
    return summary.SummaryEffects(
        archive, exports, text, index, score, first, block, readable, notes, whole
    )


def checked(state: SessionState, text: str, request: str, previous: str | None) -> str:
    """``text`` with the lines attributing to the user words no user message holds marked
    (``attribution.py``): checked against every user message in memory and the request."""
    user = [*attribution.user_texts(state.msgs, state.pinned.answered), (request, None)]
    return attribution.check(text, attribution.UserSources.of(user, previous))[0]


def event_of(edit: BlockEdit | SummaryEdit | NativeEdit) -> tuple[tuple[str, ...], str, Score]:
    """What the event of ``edit`` says: the files it names, a note, the summary's score."""
    if isinstance(edit, NativeEdit):
        if edit.archive is None:
            return (), "the provider's compaction block opens the view; nothing was before it", None
        note = (
            f"{edit.cut - edit.start} messages before the provider's compaction block saved; "
            "the view starts at the block"
        )
        return (edit.archive,), note, None
    if isinstance(edit, SummaryEdit):
        folded = len(edit.folded) + edit.folded_more
        closed = "; the turn closed, recent steps carried" if edit.closes else ""
        who = " by the provider (its compaction block)" if edit.block is not None else ""
        note = (
            f"{edit.cut - edit.start} messages summarized{who}; user messages: "
            f"{len(edit.pins)} pinned, {folded} folded{closed}"
        )
        return (edit.archive,), note, edit.score
    if edit.op == "persist":
        paths = tuple(b.path for b in edit.blocks)
        return paths, f"{len(paths)} new results persisted with a preview", None
    return edit.paths, f"{len(edit.blocks)} seen results cleared", None


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
    gap: Message = {"role": "user", "content": prompts.summary_gap(tail - head, archive)}
    return [*messages[:head], gap, *messages[tail:]]


__all__ = [
    "PassIO",
    "describe",
    "effects",
    "event_of",
    "persist",
    "summarize",
    "summary_view",
]
