"""The history as a summarizing model reads it: plain text, not JSON.

    --- message 3 · assistant ---
    I'll run the tests.
    [tool call bash toolu_01] {"command": "pytest -x"}
    --- message 4 · tool results ---
    [result of toolu_01, error]
    FAILED tests/test_parser.py::test_empty - ValueError: empty input
    [... 9,120 more characters not shown here: the archive of these messages holds them]

Text is shown as it is (no escapes); tool calls as their name and input; a result longer than
``result_chars`` by its head and tail around a line that says how much is missing and where
it is; images and documents by their kind; thinking blocks not at all (they are the model's
scratch, and the API does not need them back). Above ``limit`` characters the transcript keeps
its first quarter and last three quarters of the limit, cut between whole messages, around a
line that says how many messages are missing.
"""

from __future__ import annotations

import json
from typing import Any

from .messages import THINKING, Message, block_type, blocks, readable_text

SHOWN_RESULT_CHARS = 2_000


def _clip_result(text: str, result_chars: int) -> str:
    if len(text) <= result_chars:
        return text
    head = result_chars * 2 // 3
    tail = result_chars - head
    missing = len(text) - head - tail
    return (
        f"{text[:head]}\n[... {missing:,} more characters not shown here: the archive of these "
        f"messages holds them]\n{text[len(text) - tail :]}"
    )


def _block(block: Any, result_chars: int) -> str | None:
    kind = block_type(block)
    if kind == "text":
        return str(block.get("text", ""))
    if kind in THINKING:
        return None
    if kind == "tool_use":
        args = json.dumps(block.get("input"), ensure_ascii=False, default=str)
        return f"[tool call {block.get('name')} {block.get('id')}] {_clip_result(args, 1_000)}"
    if kind == "tool_result":
        flag = ", error" if block.get("is_error") else ""
        text = readable_text(block)
        if text is None:
            inner = [_block(b, result_chars) for b in block.get("content") or []]
            text = "\n".join(t for t in inner if t)
        return f"[result of {block.get('tool_use_id')}{flag}]\n{_clip_result(text, result_chars)}"
    return f"[{kind or 'block'}]"


def _role(message: Message) -> str:
    role = str(message.get("role"))
    if role == "user" and any(block_type(b) == "tool_result" for b in blocks(message)):
        return "tool results"
    return role


def render(message: Message, number: int, result_chars: int = SHOWN_RESULT_CHARS) -> str:
    """One message as text, headed by its number and role."""
    content = message.get("content")
    if isinstance(content, str):
        body = content
    else:
        parts = [_block(b, result_chars) for b in blocks(message)]
        body = "\n".join(p for p in parts if p is not None)
    return f"--- message {number} · {_role(message)} ---\n{body}\n"


def transcript(
    messages: list[Message], limit: int = 80_000, result_chars: int = SHOWN_RESULT_CHARS
) -> str:
    """``messages`` as readable text, at most about ``limit`` characters."""
    rendered = [render(m, i + 1, result_chars) for i, m in enumerate(messages)]
    if sum(map(len, rendered)) <= limit:
        return "".join(rendered)
    head, used = 0, 0
    while head < len(rendered) and used + len(rendered[head]) <= limit // 4:
        used += len(rendered[head])
        head += 1
    tail, used = len(rendered), 0
    while tail > head and used + len(rendered[tail - 1]) <= limit - limit // 4:
        used += len(rendered[tail - 1])
        tail -= 1
    if tail == len(rendered) and tail > head:
        # Even the newest message alone is over the limit: show its head.
        rendered[-1] = rendered[-1][: limit - limit // 4]
        tail -= 1
    gap = f"[... messages {head + 1}-{tail} not shown for length ...]\n"
    return "".join([*rendered[:head], gap, *rendered[tail:]])


__all__ = ["SHOWN_RESULT_CHARS", "render", "transcript"]
