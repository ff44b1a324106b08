"""What the Messages API would refuse in a request, for the bench's long-turn workload.

The rules, from Anthropic's "Building with extended thinking" and "How to implement tool
use" guides (read 2025-11), as the service applies them (consecutive messages of one role
are merged first, as the API merges them):

- every ``tool_use`` of an assistant message is answered by a ``tool_result`` in the next
  user message, and every ``tool_result`` answers a ``tool_use`` of the assistant message
  just before it ("tool pairs whole");
- with ``thinking`` on, the final assistant turn (the assistant messages after the last run
  of user messages that holds no ``tool_result``) opens with a ``thinking`` or
  ``redacted_thinking`` block;
- a thinking block goes back exactly as it came: its ``signature`` covers its text. The
  bench signs the thinking it makes up (``sign``) and refuses one of its signatures over
  other text, or a block that gained or lost a field; a signature it did not issue is not
  checked (it cannot know it).

``refusal(messages, thinking=True)`` is the first rule a request breaks, as a sentence, or
``None``. The bench's own copy, independent of the engine's helpers (``messages.py``) so
that it does not share their mistakes.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..messages import Block

THINKING = ("thinking", "redacted_thinking")
SIGNATURE_PREFIX = "benchsig-"

Run = tuple[int, str, list[tuple[int, Any]]]


def sign(thinking: str) -> str:
    """The signature the bench gives a thinking block it makes up."""
    return SIGNATURE_PREFIX + hashlib.sha256(thinking.encode("utf-8")).hexdigest()[:32]


def thinking_block(text: str) -> Block:
    return {"type": "thinking", "thinking": text, "signature": sign(text)}


def _blocks(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _kind(block: Any) -> str:
    return str(block.get("type")) if isinstance(block, dict) else type(block).__name__


def _runs(messages: list[Any]) -> list[Run]:
    runs: list[Run] = []
    for i, message in enumerate(messages):
        role = str(message.get("role")) if isinstance(message, dict) else "?"
        found = [(i, b) for b in _blocks(message)]
        if runs and runs[-1][1] == role:
            runs[-1][2].extend(found)
        else:
            runs.append((i, role, found))
    return runs


def _pairs(runs: list[Run]) -> str | None:
    for r, (first, role, found) in enumerate(runs):
        if role == "assistant":
            uses = [b.get("id") for _, b in found if _kind(b) == "tool_use"]
            answered: set[Any] = set()
            if r + 1 < len(runs):
                answered = {b.get("tool_use_id") for _, b in runs[r + 1][2]}
            missing = [u for u in uses if u not in answered]
            if missing:
                return f"messages.{first}: tool_use without a tool_result after it: {missing[0]}"
        elif role == "user":
            before = runs[r - 1] if r and runs[r - 1][1] == "assistant" else None
            ids = {b.get("id") for _, b in before[2] if _kind(b) == "tool_use"} if before else set()
            for i, b in found:
                if _kind(b) == "tool_result" and b.get("tool_use_id") not in ids:
                    return (
                        f"messages.{i}: tool_result with no tool_use before it: "
                        f"{b.get('tool_use_id')}"
                    )
    return None


def final_turn_opener(messages: list[Any]) -> int | None:
    """Index of the first assistant message after the last run of user messages holding no
    tool_result: the message that opens the final assistant turn (None when there is none,
    that is, the model's next message opens a new turn)."""
    runs = _runs(messages)
    start = 0
    for r, (_, role, found) in enumerate(runs):
        if role == "user" and not any(_kind(b) == "tool_result" for _, b in found):
            start = r + 1
    return next((first for first, role, _ in runs[start:] if role == "assistant"), None)


def _thinking(messages: list[Any], runs: list[Run], thinking: bool) -> str | None:
    for _, role, found in runs:
        if role != "assistant":
            continue
        for i, b in found:
            if _kind(b) != "thinking":
                continue
            signature = str(b.get("signature") or "")
            if signature.startswith(SIGNATURE_PREFIX) and b != thinking_block(
                str(b.get("thinking"))
            ):
                return f"messages.{i}: a thinking block was modified (invalid signature)"
    if not thinking:
        return None
    opener = final_turn_opener(messages)
    if opener is None:
        return None
    content = _blocks(messages[opener])
    first = _kind(content[0]) if content else "nothing"
    if first in THINKING:
        return None
    return f"messages.{opener}: the final assistant turn opens with {first}, not thinking"


def refusal(messages: list[Any], thinking: bool = True) -> str | None:
    """The first rule of the Messages API that a request of ``messages`` breaks (with
    ``thinking`` on or off), or ``None`` when the API would accept it."""
    if not isinstance(messages, list):
        return "messages is not a list"
    runs = _runs(messages)
    return _pairs(runs) or _thinking(messages, runs, thinking)
