"""What the Messages API refuses, checked the way the service checks it, for ``stub_api``.

The rules (Anthropic's "Building with extended thinking" and "How to implement tool use"
guides, and the error bodies the API answers with):

- every ``tool_use`` of an assistant turn is answered by a ``tool_result`` in the next
  message, and every ``tool_result`` answers a ``tool_use`` of the message before it
  (consecutive messages of one role are merged first, as the API merges them);
- with ``thinking`` enabled, the first assistant message of the final assistant turn (the
  assistant messages after the last run of user messages without a tool result) opens with a
  ``thinking`` or ``redacted_thinking`` block;
- on a model with preserved thinking the API may drop the opening block itself (prefix
  check, drop mode): a final turn whose later thinking was made on the prefix without it is
  accepted (``api_binding.vouched``);
- a thinking block goes back exactly as it came: its ``signature`` covers its text. The stub
  signs the thinking it sends (``sign``) and refuses one of its own signatures over other
  text; a signature it did not issue is not checked (it cannot know it).

``violation(body)`` answers the ``ErrorReply`` the API would send for a request body, or
``None``. The texts are the API's own.
"""

from __future__ import annotations

import hashlib
from typing import Any

import api_binding

THINKING = ("thinking", "redacted_thinking")
SIGNATURE_PREFIX = "stubsig-"
THINKING_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"


def sign(thinking: str) -> str:
    """The signature the stub gives a thinking block it sends."""
    return SIGNATURE_PREFIX + hashlib.sha256(thinking.encode("utf-8")).hexdigest()[:24]


def _blocks(message: dict[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _kind(block: Any) -> str:
    return str(block.get("type")) if isinstance(block, dict) else type(block).__name__


Run = tuple[int, str, list[tuple[int, int, Any]]]


def _runs(messages: list[dict[str, Any]]) -> list[Run]:
    """Consecutive messages of one role merged: (index of the first, role, blocks with their
    message and block index)."""
    runs: list[Run] = []
    for i, message in enumerate(messages):
        role = str(message.get("role"))
        found = [(i, k, b) for k, b in enumerate(_blocks(message))]
        if runs and runs[-1][1] == role:
            runs[-1][2].extend(found)
        else:
            runs.append((i, role, found))
    return runs


def tool_pairing(runs: list[Run], count: int) -> str | None:
    for r, (_, role, found) in enumerate(runs):
        if role != "assistant":
            continue
        uses = [b.get("id") for _, _, b in found if _kind(b) == "tool_use"]
        if not uses:
            continue
        answered: set[Any] = set()
        where = count
        if r + 1 < len(runs):
            where = runs[r + 1][0]
            answered = {
                b.get("tool_use_id") for _, _, b in runs[r + 1][2] if _kind(b) == "tool_result"
            }
        missing = [u for u in uses if u not in answered]
        if missing:
            return (
                f"messages.{where}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(map(str, missing))}. Each `tool_use` block must "
                "have a corresponding `tool_result` block in the next message."
            )
    for r, (_, role, found) in enumerate(runs):
        if role != "user":
            continue
        before = runs[r - 1][2] if r > 0 and runs[r - 1][1] == "assistant" else []
        uses_before = {b.get("id") for _, _, b in before if _kind(b) == "tool_use"}
        for i, k, b in found:
            if _kind(b) == "tool_result" and b.get("tool_use_id") not in uses_before:
                return (
                    f"messages.{i}.content.{k}: unexpected `tool_use_id` found in `tool_result` "
                    f"blocks: {b.get('tool_use_id')}. Each `tool_result` block must have a "
                    "corresponding `tool_use` block in the previous message."
                )
    return None


def _opener(runs: list[Run]) -> int | None:
    start = 0
    for r, (_, role, found) in enumerate(runs):
        if role == "user" and not any(_kind(b) == "tool_result" for _, _, b in found):
            start = r + 1
    for first, role, _ in runs[start:]:
        if role == "assistant":
            return first
    return None


def final_turn_opener(messages: list[dict[str, Any]]) -> int | None:
    """Index of the first assistant message after the last run of user messages that holds
    no tool result (None when the final turn has no assistant message)."""
    return _opener(_runs(messages))


def thinking_rules(body: dict[str, Any], runs: list[Run]) -> str | None:
    messages = body.get("messages") or []
    for _, role, found in runs:
        if role != "assistant":
            continue
        for i, k, b in found:
            if _kind(b) != "thinking":
                continue
            signature = str(b.get("signature") or "")
            # A signature bound to a prefix (``api_binding``) signs the text in its first part.
            signed = signature[len(SIGNATURE_PREFIX) :].split("-")[0]
            if signature.startswith(SIGNATURE_PREFIX) and SIGNATURE_PREFIX + signed != sign(
                str(b.get("thinking"))
            ):
                return f"messages.{i}.content.{k}: Invalid `signature` in `thinking` block"
    thinking = body.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") not in ("enabled", "adaptive"):
        return None
    opener = _opener(runs)
    if opener is None:
        return None
    content = _blocks(messages[opener])
    found_kind = _kind(content[0]) if content else "nothing"
    if found_kind in THINKING:
        return None
    if api_binding.vouched(body, opener):
        # A later thinking block was made on this very prefix, opening block missing: the
        # API dropped that block itself (prefix check, drop mode), and the caller mirrors it.
        return None
    return (
        f"messages.{opener}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
        f"found `{found_kind}`. When `thinking` is enabled, a final `assistant` message must "
        "start with a thinking block (preceeding the lastmost set of `tool_use` and "
        "`tool_result` blocks). We recommend you include thinking blocks from previous turns. "
        "To avoid this requirement, disable `thinking`. Please consult our documentation at "
        f"{THINKING_DOCS}"
    )


def thinking_request(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A Messages request body for ``messages`` with extended thinking on."""
    return {
        "model": "stub",
        "max_tokens": 2048,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": messages,
    }


def violation_text(body: Any) -> str | None:
    """The API's message for what is wrong with a Messages request body, or None."""
    if not isinstance(body, dict):
        return None
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    runs = _runs(messages)
    return tool_pairing(runs, len(messages)) or thinking_rules(body, runs)
