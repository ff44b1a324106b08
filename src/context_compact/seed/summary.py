"""Stage 4 and its emergency twin: replace history by a summary message.

* ``compact_history`` (S-4): transcript first, then the summary of the whole history, then
  one ``[Compacted]`` message in place of everything.
* ``reactive_compact`` (S-5.1): after the API refused the prompt. Transcript first; the last
  ``keep_recent_messages`` stay verbatim (the cut moves back one message rather than split a
  tool pair, as S-2.3); only the older prefix is summarized (S-7.3), and the
  ``[Reactive compact]`` message goes before the kept tail.

Beyond the seed (which knows only text and tool blocks): with extended thinking, the API
refuses a request whose turn in progress does not open with its thinking block. Keeping
exactly the last five messages can start the tail in the middle of such a turn, so the cut
moves back to the turn's thinking block: more is kept verbatim than S-5.1 says, and what is
summarized is still exactly the dropped prefix (S-7.3). Without thinking blocks the cut is
the seed's. ``compact_history`` replaces everything, so no turn is left to open.

The active request is always passed in by the caller, never inferred (S-4.5).
"""

from __future__ import annotations

from ..invariants import thinking_start
from ..markers import summary_message
from ..messages import Message, has_tool_use, is_tool_result
from .base import StageContext, Summarizer


def compact_history(
    messages: list[Message], active_request: str, ctx: StageContext, summarizer: Summarizer
) -> list[Message]:
    before = ctx.size(messages)
    transcript = ctx.store.write_transcript(messages)
    ctx.say(f"[transcript saved: {transcript}]")
    summary = summarizer(list(messages))
    out = [summary_message("Compacted", active_request, summary, transcript)]
    ctx.event("compact_history", before, ctx.size(out), (transcript,), "[auto compact]")
    return out


def reactive_cut(messages: list[Message], keep: int) -> int:
    """Where the verbatim tail starts (S-5.1): never between a tool_use and its result, and,
    beyond the seed, never after the thinking block that opens the turn in progress
    (``messages.thinking_start``): the tail then keeps more than ``keep`` messages."""
    tail_start = max(0, len(messages) - keep)
    if (
        tail_start > 0
        and is_tool_result(messages[tail_start])
        and has_tool_use(messages[tail_start - 1])
    ):
        tail_start -= 1
    marker: Message = {"role": "user", "content": ""}
    return thinking_start(messages, tail_start, [marker]) if tail_start > 0 else 0


def reactive_compact(
    messages: list[Message], active_request: str, ctx: StageContext, summarizer: Summarizer
) -> list[Message]:
    before = ctx.size(messages)
    transcript = ctx.store.write_transcript(messages)
    tail_start = reactive_cut(messages, ctx.policy.keep_recent_messages)
    old = messages[:tail_start] if tail_start else messages
    summary = summarizer(list(old))
    message = summary_message("Reactive compact", active_request, summary, transcript)
    out = [message, *messages[tail_start:]] if tail_start else [message]
    ctx.event(
        "reactive_compact", before, ctx.size(out), (transcript,), f"kept {len(out) - 1} messages"
    )
    return out
