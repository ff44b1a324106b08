"""Preserved thinking over the session's state: where a change voids thinking blocks, and
the ``Strip`` that takes them out (the rules are ``thinking.py``'s).

``strip_for`` compares the view before an edit with the state's view after it and answers the
``Strip`` the change calls for (None when no thinking block is at or after the change);
``strip_at`` answers one from a given block (the API's refusal, its dropped list). Pure
functions of the state: the engine records what they answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..messages import Message, block_type, blocks, opens_with_thinking
from .records import BlockEdit, Edit, NativeEdit, Strip, SummaryEdit
from .state import SessionState
from .thinking import change_point, is_thinking, thinking_after


@dataclass(frozen=True)
class Before:
    """The view as it stood before an edit: its messages (the objects), the length of its
    prefix and the first log position it renders."""

    view: tuple[Message, ...]
    prefix: int
    first_kept: int

    @staticmethod
    def of(state: SessionState) -> Before:
        return Before(tuple(state.view), len(state.prefix), state.first_kept)


def _first_block(old: Message, new: Message) -> int:
    at = change_point([old], [new])
    return 0 if at is None else at[1]


def strip_for(
    state: SessionState, before: Before, edit: Edit | NativeEdit | None, reason: str
) -> Strip | None:
    """The ``Strip`` a change from ``before`` to the state's view calls for, or None: from
    the first logged block whose message differs on or whose prefix changed, when a thinking
    block is there or after it. A summary of ours changes what comes before everything it
    keeps; a provider's compaction block does not (the API wrote it, and accepts it before
    the kept turns); a clearing or a persist changes only from its oldest block."""
    view, k, first = state.view, len(state.prefix), state.first_kept
    start = first
    if isinstance(edit, SummaryEdit):
        return strip_at(state, first, 0, reason)
    if isinstance(edit, NativeEdit):
        start = edit.cut + 1
    elif isinstance(edit, BlockEdit):
        touched = [b.seq for b in edit.blocks] + [i.seq for i in edit.inputs]
        start = max(first, min(touched, default=state.n))
    elif before.prefix != k or any(a is not b for a, b in zip(before.view, view[:k], strict=False)):
        return strip_at(state, first, 0, reason)
    for seq in range(start, state.n):
        new = view[k + seq - first]
        index = before.prefix + seq - before.first_kept
        old = before.view[index] if seq >= before.first_kept and index < len(before.view) else None
        if old is new or (old is not None and old == new):
            continue
        return strip_at(state, seq, 0 if old is None else _first_block(old, new), reason)
    return None


def strip_at(state: SessionState, seq: int, block: int, reason: str) -> Strip | None:
    """A ``Strip`` from ``block`` of message ``seq`` when the view still holds a thinking
    block there or after it; None when it holds none."""
    k, first, view = len(state.prefix), state.first_kept, state.view
    for at in range(max(seq, first), state.n):
        if thinking_after(view[k + at - first], block if at == seq else 0):
            return Strip(seq, block, reason)
    return None


def opening_lost(state: SessionState) -> bool:
    """Whether the turn in progress opened with a thinking block that the view no longer
    sends (the API refused or dropped it): the Messages API refuses such a final turn."""
    first = state.turn.first
    if first is None or not state.turn.thinks or first < state.first_kept:
        return False
    return not opens_with_thinking(state.view[state.view_index(first)])


def request_text(state: SessionState) -> str:
    """The text of the latest user request logged, or ""."""
    seq = state.latest_request
    message = state.msgs.get(seq) if seq is not None else None
    if message is None:
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in blocks(message) if block_type(b) == "text")


def count_from(state: SessionState, seq: int, block: int) -> int:
    """How many thinking blocks the view holds from ``block`` of message ``seq`` on."""
    k, first, view = len(state.prefix), state.first_kept, state.view
    count = 0
    for at in range(max(seq, first), state.n):
        content = view[k + at - first].get("content")
        if isinstance(content, list):
            start = block if at == seq else 0
            count += sum(1 for b in content[start:] if is_thinking(b))
    return count


__all__ = [
    "Before",
    "count_from",
    "opening_lost",
    "request_text",
    "strip_at",
    "strip_for",
]
