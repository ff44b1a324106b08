"""Hypothesis strategies for valid Anthropic-shaped histories, and small builders for tests.

Generated histories have several tool_use blocks per assistant message, text blocks beside
them, results answered in shuffled order, consecutive user messages, string and list
contents, and result sizes from a few characters to 150k. Every one passes ``check()``.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import strategies as st

SIZES = st.one_of(
    st.integers(0, 200),
    st.integers(100, 3_000),
    st.integers(3_000, 40_000),
    st.integers(30_000, 150_000),
)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def call(*ids: str, text: str | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [
        {"type": "tool_use", "id": i, "name": "bash", "input": {"command": f"cat {i}"}} for i in ids
    ]
    return {"role": "assistant", "content": content}


def results(*pairs: tuple[str, str]) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": i, "content": c} for i, c in pairs],
    }


def pair(tool_id: str, content: str) -> list[dict[str, Any]]:
    return [call(tool_id), results((tool_id, content))]


def body(tag: str, size: int) -> str:
    """A result of exactly ``size`` characters whose first characters name it."""
    head = f"<{tag}>"
    return (head + "y" * size)[:size] if size >= len(head) else "z" * size


@st.composite
def histories(
    draw: st.DrawFn, max_turns: int = 70, sizes: st.SearchStrategy[int] = SIZES
) -> list[dict[str, Any]]:
    counter = itertools.count(1)
    messages: list[dict[str, Any]] = [
        user(draw(st.sampled_from(["fix the bug", "读取文件并总结", "go"])))
    ]
    for _ in range(draw(st.integers(0, max_turns))):
        kind = draw(st.sampled_from(["tools", "tools", "tools", "text", "user_note"]))
        if kind == "tools":
            ids = [f"toolu_{next(counter):04d}" for _ in range(draw(st.integers(1, 3)))]
            text = draw(st.one_of(st.none(), st.just("Let me look.")))
            messages.append(call(*ids, text=text))
            order = draw(st.permutations(ids))
            messages.append(results(*((i, body(i, draw(sizes))) for i in order)))
        elif kind == "text":
            messages.append(assistant("Done with that step."))
            messages.append(user("continue"))
        else:
            messages.append(user("also: keep the tests green"))
    if draw(st.booleans()):
        ids = [f"toolu_{next(counter):04d}" for _ in range(draw(st.integers(1, 2)))]
        messages.append(call(*ids))
    return messages
