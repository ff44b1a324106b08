"""Preserved thinking: a view never changes what comes before a thinking block it still sends.

Newer Claude models bind every ``thinking`` and ``redacted_thinking`` block to its prefix: the
top-level ``system``, the ``tools`` and everything before the block in the request that
produced it. A later request that sends the block back after anything before it changed
fails the API's prefix check (a 400, or the block and every later one dropped), and leaving
out a block that sits between two sent ones changes the prefix of the later one. Every
compaction is such a change. So, on a model that checks:

* **Strip at the change.** After a call's compaction, the first place where the new view
  differs from the view the call started from (the last view sent plus what the caller
  appended) is its change point (``change_point``). Every thinking block logged so far at
  or after it leaves the view for good (a ``Strip`` record), in the same view that makes the
  change: one rewrite of the prefix, not two. Blocks before the change point and blocks
  logged later (made on the stripped view) go out byte for byte. No block between two kept
  ones is ever removed: a strip takes every block after its point that exists when it is
  made.
* **The turn in progress keeps its opening.** The Messages API wants the first assistant
  message of the turn in progress to open with its thinking block. While that block is
  still sent, nothing before it may change (``SessionState.wall``): a clearing takes only
  results after it, and a summary closes the turn (everything up to the end of the log is
  summarized, the newest steps ride along as text) rather than keep part of it.
* **Known, learned, journaled.** Which models check comes from a table (``checks_prefix``;
  a ``claude-*`` name we do not know is taken to check), from the policy's
  ``preserved_thinking`` knob, or from the session itself: a refusal in the API's words or
  a response listing dropped blocks turns it on, as a ``Setting`` record, so a resume
  decides as the process that stopped did.

Invariants (``tests/session/test_preserved_thinking.py`` holds them as properties): no block
before a view's change point is removed, none after it is kept, and stripping leaves every
message valid (an assistant message left with no block gets a one-line text instead).
Models that do not check: no ``Strip`` is ever recorded and the views are unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from .. import markers
from ..messages import THINKING, Block, Message, block_type, blocks, opens_with_thinking
from .records import BlockEdit, Edit, NativeEdit, Strip, SummaryEdit

if TYPE_CHECKING:
    from .state import SessionState

PreservedThinking = bool | Literal["auto"]

# The models the API documents as running the prefix check (platform.claude.com,
# "Prefix checks on thinking blocks": supported models).
CHECKING = (
    "claude-fable-5-2",
    "claude-mythos-5-2",
    "claude-fable-5-1",
    "claude-mythos-5-1",
    "claude-opus-5-5",
    "claude-sonnet-5-5",
    "claude-haiku-5-5",
)
# Claude models from before the check: their thinking is not bound to its prefix.
_OLDER = re.compile(
    r"claude-(?:instant|[0-9]|(?:opus|sonnet|haiku)-[0-4](?:-|$)|mythos-preview|"
    r"(?:opus|sonnet|haiku|fable|mythos)-5(?:-[0-9]{8}|-v[0-9]|-latest|-preview|@|$))"
)
_CLAUDE = re.compile(r"claude-[a-z0-9@-]+")

SETTING = "preserved_thinking"
"""The ``Setting`` that turns the check on (or off) for a session."""
DROP_SETTING = "prefix_mismatch_behavior"
"""The ``Setting`` that keeps ``"drop_block"`` asked of the API for a session."""
DROP_BLOCK = "drop_block"
BETA = "thinking-binding-controls-2026-08-01"
"""The beta header ``thinking.block_binding`` needs."""


def checks_prefix(model: str | None) -> bool:
    """Whether ``model`` runs the prefix check, as far as its name tells: the documented
    ones, and any ``claude-*`` name newer than the ones documented not to (provider
    prefixes and suffixes such as Bedrock's ``anthropic.…-v1:0`` are read through)."""
    if not model:
        return False
    name = model.lower().replace(".", "-") if "claude" in model.lower() else ""
    found = _CLAUDE.search(name)
    if found is None:
        return False
    claude = found.group(0)
    if any(claude.startswith(known) for known in CHECKING):
        return True
    return _OLDER.match(claude) is None


def is_thinking(block: Block) -> bool:
    return block_type(block) in THINKING


def thinking_after(message: Message, start: int) -> bool:
    """Whether ``message`` holds a thinking block at index ``start`` or later."""
    content = message.get("content")
    if not isinstance(content, list):
        return False
    return any(is_thinking(b) for b in content[start:])


def without_thinking(message: Message, start: int) -> Message:
    """``message`` without its thinking blocks from index ``start`` on (a shallow copy: the
    other blocks are the same objects); an assistant message left with no block says in one
    line that its reasoning was removed, since the API refuses an empty one."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    kept = [b for i, b in enumerate(content) if i < start or not is_thinking(b)]
    if not kept:
        kept = [{"type": "text", "text": markers.THINKING_REMOVED}]
    out: Message = {**message, "content": kept}
    return out


def change_point(before: Sequence[Message], after: Sequence[Message]) -> tuple[int, int] | None:
    """The first (message index, block index) where ``after`` differs from ``before``, or
    None when ``after`` only extends it. Identity first, equality where objects differ (a
    message copied but unchanged is no change)."""
    for index, (old, new) in enumerate(zip(before, after, strict=False)):
        if old is new or old == new:
            continue
        old_blocks, new_blocks = blocks(old), blocks(new)
        if old.get("role") != new.get("role"):
            return index, 0
        for at, (a, b) in enumerate(zip(old_blocks, new_blocks, strict=False)):
            if a != b:
                return index, at
        return index, min(len(old_blocks), len(new_blocks))
    if len(after) < len(before):
        return len(after), 0
    return None


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


REASONS = {
    "refusal": "the API refused their prefix",
    "dropped": "the API dropped them (prefix changed)",
    "undo": "a compaction was undone before them",
}
"""What a ``Strip``'s reason says; any other reason is the compaction stage that changed
what came before the blocks."""


__all__ = [
    "BETA",
    "CHECKING",
    "DROP_BLOCK",
    "DROP_SETTING",
    "REASONS",
    "SETTING",
    "THINKING",
    "Before",
    "PreservedThinking",
    "change_point",
    "checks_prefix",
    "count_from",
    "is_thinking",
    "opening_lost",
    "request_text",
    "strip_at",
    "strip_for",
    "thinking_after",
    "without_thinking",
]
