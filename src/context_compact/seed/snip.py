"""Stage 2, snip_compact (S-2): archive the middle of a long message list.

Above ``snip_max_messages`` messages, keeps the first ``snip_head`` and the last
``snip_max_messages - snip_head``, moving the head cut forward past tool results that answer
the head's last message (S-2.2) and the tail cut back over a tool pair (S-2.3), so no pair
is split. The whole list is written to a transcript first (S-2.4) and the middle becomes
one marker message naming it (S-2.5).

Beyond the seed: the marker is a user message, so a tail that starts inside a turn whose
first assistant message opens with a thinking block must start at a message that opens with
one too (the API refuses it otherwise); the tail cut then moves back to the turn's thinking
block (``messages.thinking_start``) and the tail keeps more than 47 messages. Without
thinking blocks the cuts are the seed's.
"""

from __future__ import annotations

from ..invariants import thinking_start
from ..markers import snip_marker
from ..messages import Message, has_tool_use, is_tool_result
from .base import StageContext


def snip_cuts(messages: list[Message], max_messages: int, head: int) -> tuple[int, int]:
    """The seed's head end and tail start, with pair protection at both cuts."""
    head_end = head
    tail_start = len(messages) - (max_messages - head)
    if has_tool_use(messages[head_end - 1]):
        while head_end < tail_start and is_tool_result(messages[head_end]):
            head_end += 1
    if (
        tail_start > 0
        and is_tool_result(messages[tail_start])
        and has_tool_use(messages[tail_start - 1])
    ):
        tail_start -= 1
    marker: Message = {"role": "user", "content": ""}
    return head_end, thinking_start(messages, tail_start, [*messages[:head_end], marker])


def snip_compact(messages: list[Message], ctx: StageContext) -> list[Message]:
    policy = ctx.policy
    if len(messages) <= policy.snip_max_messages:
        return list(messages)
    head_end, tail_start = snip_cuts(messages, policy.snip_max_messages, policy.snip_head)
    if tail_start <= head_end:
        # Only reachable with an invalid pairing or odd overrides; cutting nothing is safe.
        return list(messages)
    before = ctx.size(messages)
    transcript = ctx.store.write_transcript(messages)
    marker: Message = {
        "role": "user",
        "content": snip_marker(tail_start - head_end, transcript),
    }
    out = [*messages[:head_end], marker, *messages[tail_start:]]
    ctx.event(
        "snip_compact",
        before,
        ctx.size(out),
        (transcript,),
        f"{len(messages)} -> {len(out)} messages",
    )
    return out
