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
  summarized, the newest steps ride along as text) rather than keep part of it. A closing
  summary buys many steps at the cost of one reply's thinking, where clearing after clearing
  would cost one each: measured, it keeps 95-97% of the replies' thinking in the next
  request, against 84% for clearings alone (``benchmarks/preserved_thinking.py``).
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
from typing import Literal

from .. import markers
from ..messages import THINKING, Block, Message, block_type, blocks

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
    ones, and any versioned ``claude-*`` name newer than the ones documented not to
    (provider prefixes and suffixes such as Bedrock's ``anthropic.…-v1:0`` are read
    through); a name without a version (``claude-latest``) is learned from the API."""
    if not model:
        return False
    name = model.lower().replace(".", "-") if "claude" in model.lower() else ""
    found = _CLAUDE.search(name)
    if found is None:
        return False
    claude = found.group(0)
    if any(claude.startswith(known) for known in CHECKING):
        return True
    # A name with a version we do not know is a newer model; one without (an alias, a
    # test name) tells nothing: the session learns it from the API instead.
    return _OLDER.match(claude) is None and any(c.isdigit() for c in claude)


def is_thinking(block: Block) -> bool:
    return block_type(block) in THINKING


def thinking_after(message: Message, start: int) -> bool:
    """Whether ``message`` holds a thinking block at index ``start`` or later."""
    content = message.get("content")
    if not isinstance(content, list):
        return False
    return any(is_thinking(b) for b in content[start:])


def without_thinking(blocks_: list[Block], start: int) -> list[Block]:
    """``blocks_`` (a message's content) without its thinking blocks from index ``start``
    on; a message left with no block gets one line saying its reasoning was removed, since
    the API refuses an empty one."""
    kept = [b for i, b in enumerate(blocks_) if i < start or not is_thinking(b)]
    return kept or [{"type": "text", "text": markers.THINKING_REMOVED}]


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


REASONS = {
    "refusal": "the API refused their prefix",
    "dropped": "the API dropped them (prefix changed)",
    "undo": "a compaction was undone before them",
    "clear_old_results": "a clearing changed what came before them",
    "persist_new_results": "a result before them was saved with a preview",
    "summarize": "a summary replaced what came before them",
    "compact_history": "a summary replaced what came before them",
    "reactive_compact": "a summary replaced what came before them",
    "native_compaction": "our note after the provider's compaction came before them",
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
    "PreservedThinking",
    "change_point",
    "checks_prefix",
    "is_thinking",
    "thinking_after",
    "without_thinking",
]
