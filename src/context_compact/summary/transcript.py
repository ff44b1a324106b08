"""The history as a summarizing model reads it: plain text, not JSON.

    --- message 3 · assistant · 5be0c1d2a3f4 ---
    I'll run the tests.
    [tool call bash toolu_01] {"command": "pytest -x"}
    --- message 4 · tool results · 5be0c1d2a3f4 ---
    [result of toolu_01, error]
    FAILED tests/test_parser.py::test_empty - ValueError: empty input
    [... 9,120 more characters not shown here: the archive of these messages holds them]

Each message opens with a header that carries the transcript's boundary token
(``quoting.boundary`` of every message's text, and of whatever else the caller quotes with
it: ``also``), so no text in a message can forge a header, a gap line or the closer of the
quote the transcript is put in. Text is shown as it is (no escapes); tool calls as their
name (and id: ``quoting.name_of``, so neither can end their bracket) and input; a result
longer than ``result_chars`` by its head and tail around a line that says how much is
missing and where it is; images and documents by their kind; thinking blocks not at all
(they are the model's scratch, and the API does not need them back). Above ``limit``
characters the transcript keeps its first quarter and last three quarters of the limit, cut
between whole messages, around a line that says how many messages are missing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, NamedTuple

from ..messages import THINKING, Message, block_type, blocks, readable_text
from ..quoting import boundary, name_of
from .prompts import message_header, transcript_gap

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
        call = f"{name_of(block.get('name'))} {name_of(block.get('id'))}"
        return f"[tool call {call}] {_clip_result(args, 1_000)}"
    if kind == "tool_result":
        flag = ", error" if block.get("is_error") else ""
        text = readable_text(block)
        if text is None:
            inner = [_block(b, result_chars) for b in block.get("content") or []]
            text = "\n".join(t for t in inner if t)
        text = _clip_result(text, result_chars)
        return f"[result of {name_of(block.get('tool_use_id'))}{flag}]\n{text}"
    return f"[{kind or 'block'}]"


def _role(message: Message) -> str:
    role = str(message.get("role"))
    if role == "user" and any(block_type(b) == "tool_result" for b in blocks(message)):
        return "tool results"
    return role


def body(message: Message, result_chars: int = SHOWN_RESULT_CHARS) -> str:
    """One message's text, without its header."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = [_block(b, result_chars) for b in blocks(message)]
    return "\n".join(p for p in parts if p is not None)


class Transcript(NamedTuple):
    """A transcript's text and the boundary token its headers carry (for the quote it goes
    in: no message's text, nor anything quoted with it, holds the token)."""

    text: str
    token: str


def steps(
    numbered: Iterable[tuple[int, Message]],
    limit: int | None = None,
    result_chars: int = SHOWN_RESULT_CHARS,
    also: Iterable[str] = (),
) -> Transcript:
    """The messages as readable text, each headed by its number and role, at most about
    ``limit`` characters; ``also`` is the other text its quote will carry (kept out of
    the token too)."""
    shown = [(n, _role(m), body(m, result_chars)) for n, m in numbered]
    token = boundary(*also, *(text for _, _, text in shown))
    rendered = [f"{message_header(n, role, token)}{text}\n" for n, role, text in shown]
    if limit is None or sum(map(len, rendered)) <= limit:
        return Transcript("".join(rendered), token)
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
    gap = transcript_gap(shown[head][0], shown[tail - 1][0], token) if tail > head else ""
    return Transcript("".join([*rendered[:head], gap, *rendered[tail:]]), token)


def transcript(
    messages: list[Message],
    limit: int = 80_000,
    result_chars: int = SHOWN_RESULT_CHARS,
    also: Iterable[str] = (),
) -> Transcript:
    """``messages`` numbered from 1 as readable text, at most about ``limit`` characters."""
    return steps(enumerate(messages, 1), limit, result_chars, also)


__all__ = ["SHOWN_RESULT_CHARS", "Transcript", "body", "steps", "transcript"]
