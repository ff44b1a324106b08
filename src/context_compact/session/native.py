"""A provider's own compaction, adopted: the view starts at its block, nothing is lost.

Anthropic's ``compact_20260112`` context-management edit (and its on-demand ``compaction``
request) answers with a ``compaction`` block that stands for everything before it: the API
drops what comes before the block. OpenAI's Responses API does the same with an encrypted
``compaction`` item. A caller whose own request set such an edit gets the block in the
response it appends; the engine then (``adopt``):

1. saves what the view showed before the block (the archive; the log keeps every message);
2. writes a readable summary of ours of it (extractive: no model call), kept in the edit,
   so ``inspect`` shows what was compacted and a provider that cannot read the block (an
   OpenAI item is opaque; a session moved to another provider) has words for it;
3. lists the archive in the session's index and records a ``NativeEdit``: the view starts
   at the block, unchanged, and the first user message after it names the archive and the
   index (two reads away, as everywhere else).

What the block replaced is never sent again (the API would drop it, and the budget would
count it). Our own summaries keep the block first and unchanged: they take the messages
after it (``summary.summary_start``), never a range holding it.

Invariants: the archive exists before the edit does; the edit names the newest native block
of the log; a failed compaction (an Anthropic block with no summary) is not a cut.
"""

from __future__ import annotations

from .. import markers
from ..store.disk import EncodedMessages
from ..summary.extract import extractive_summary
from .native_tier import SUMMARY_CHARS
from .passes import PassIO
from .records import NativeEdit
from .state import SessionState


def pending(state: SessionState) -> tuple[int, int] | None:
    """The newest native block logged that the view does not start at yet, or None."""
    seen = state.native_seen
    if seen is None or seen[0] < state.first_kept:
        return None
    done = state.native
    if done is not None and (done.cut, done.block) >= seen:
        return None
    return seen


def adopt(state: SessionState, io: PassIO, request: str | None) -> NativeEdit | None:
    """The edit that starts the view at the newest native block, after its copies exist."""
    seen = pending(state)
    if seen is None:
        return None
    cut, block = seen
    offset = state.view_index(cut)
    dropped = state.view[:offset]
    start = state.first_kept
    if not dropped:
        return NativeEdit(cut, block, start, None, "", "", "")
    archive = io.store.save_messages(EncodedMessages(dropped, state.shown.texts[:offset]))
    text = extractive_summary(dropped, request or None, SUMMARY_CHARS)
    what = f"messages {start}-{cut - 1}, replaced by the provider's compaction in message {cut}"
    index = io.index([markers.index_line("messages", archive, what)])
    note = markers.native_note(start, cut - 1, archive, index)
    return NativeEdit(cut, block, start, archive, index, text, note)


__all__ = ["SUMMARY_CHARS", "adopt", "pending"]
