"""What the framework adapter tests share: a tool with big outputs, a scripted model that
calls it turn after turn, and the checks every adapter must pass."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from context_compact import Compactor, MemoryStore, Policy
from context_compact.invariants import check
from stub_api import Reply, ToolCall

TURNS = 55
LIMIT = 12_000


def log_part(k: int) -> str:
    """The output of ``read_log(k)``: ~8,000 characters, with a word found nowhere else."""
    lines = [
        f"log {k:03d} line {j:03d}: worker={j % 7} status=ok latency={j * 13 % 97}ms"
        for j in range(130)
    ]
    return f"needle-{k:03d}\n" + "\n".join(lines)


def compactor() -> Compactor:
    return Compactor(Policy.default(context_limit=LIMIT), MemoryStore())


def counted(reply: Reply) -> Any:
    """``reply`` with usage that counts the request it answers (4 characters a token), as a
    real API would; the stub's fixed count would tell the compactor the view is tiny."""

    def answer(body: Any) -> Reply:
        return replace(reply, input_tokens=len(json.dumps(body)) // 4)

    return answer


def tool_loop(turns: int = TURNS) -> list[Any]:
    """A script: ``turns`` replies that each call ``read_log`` on the next part, then an answer."""
    calls = [
        Reply(
            text=f"reading part {k}",
            tool_calls=(ToolCall("read_log", {"part": k}, id=f"call_{k:03d}"),),
        )
        for k in range(turns)
    ]
    return [counted(reply) for reply in [*calls, Reply(text="all parts read")]]


def anthropic_violations(bodies: list[Any]) -> list[str]:
    """Every ``check()`` violation in the Anthropic requests the stub received."""
    return [f"request {i}: {v}" for i, body in enumerate(bodies) for v in check(body["messages"])]


def tokens(bodies: list[Any]) -> list[int]:
    """Each request's size as ``counted`` reports it to the compactor."""
    return [len(json.dumps(body)) // 4 for body in bodies]


def stages(compactor: Compactor) -> set[str]:
    return {event.stage for event in compactor.events}
