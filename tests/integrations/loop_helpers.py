"""The framework loops' shared scenario: 64 tool turns of 2-40 KB results against the stub, in
two modes.

- ``equal``: the API refuses a request over the compactor's own ``context_limit``;
- ``below``: the API refuses below the compactor's trigger (``high_water`` x limit), so the
  loop only survives by recovering each refusal (compact reactively, resend smaller).

``Gate`` is the stub's script: it counts each request (4 characters a token, as
``adapter_helpers.counted``), refuses one over the API's limit with the API's real error body,
and otherwise answers with the next reply, its usage the request's count. A refused request
consumes no reply, so the retry gets the answer the refused request would have had.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from context_compact import Compactor, MemoryStore, Policy
from stub_api import ErrorReply, Reply, ToolCall

TURNS = 64
LIMIT = 24_000
MODES = {"equal": LIMIT, "below": int(0.5 * LIMIT)}
THINKING = "I should read the next part."


def result(k: int) -> str:
    """The output of ``read_log(k)``: 2 to 40 KB, starting with a word found nowhere else."""
    size = 2_000 + (k * 7_919 % 39) * 1_000
    line = f"log {k:03d}: worker={k % 7} status=ok latency={k * 13 % 97}ms\n"
    body = (line * (size // len(line) + 1))[:size]
    return f"needle-{k:03d}\n{body}"


def compactor() -> Compactor:
    return Compactor(Policy.default(context_limit=LIMIT), MemoryStore())


def size(body: Any) -> int:
    return len(json.dumps(body)) // 4


class Gate:
    """The stub's answer to every request (see the module docstring)."""

    def __init__(
        self, replies: list[Reply], limit: int, refusal: Callable[[int, int], ErrorReply]
    ) -> None:
        self.replies = deque(replies)
        self.limit = limit
        self.refusal = refusal
        self.refused = 0

    def __call__(self, body: Any) -> Any:
        tokens = size(body)
        if tokens > self.limit:
            self.refused += 1
            return self.refusal(tokens, self.limit)
        return replace(self.replies.popleft(), input_tokens=tokens)

    def script(self) -> list[Any]:
        return [self] * (3 * len(self.replies))


def replies(turns: int = TURNS, thinking: str | None = None, prefix: str = "call") -> list[Reply]:
    """``turns`` replies that each call ``read_log`` on the next part, then an answer."""
    calls = [
        Reply(
            text=f"reading part {k}",
            thinking=thinking,
            tool_calls=(ToolCall("read_log", {"part": k}, id=f"{prefix}_{k:03d}"),),
        )
        for k in range(turns)
    ]
    return [*calls, Reply(text="all parts read", thinking=thinking)]


def within_or_retried(sizes: list[int], limit: int) -> list[str]:
    """Requests over ``limit`` not followed by a smaller one (the retry)."""
    return [
        f"request {i}: {n} tokens > {limit}, next {sizes[i + 1] if i + 1 < len(sizes) else None}"
        for i, n in enumerate(sizes)
        if n > limit and not (i + 1 < len(sizes) and sizes[i + 1] < n)
    ]


def lost(cc: Compactor, turns: int = TURNS) -> list[int]:
    """The results no ``recall`` of their word gives back in full."""
    missing = []
    for k in range(turns):
        page = cc.recall(f"needle-{k:03d}", limit=50_000)
        if result(k) not in page.text:
            missing.append(k)
    return missing
