"""The scenario of the ADK and CrewAI loops: 60 tool steps whose results are a few thousand
characters each, against an API whose window is the compactor's 8,000 tokens.

The whole history is about 20 times the window, so a loop that sends it whole is refused by
the 5th step; one that is compacted runs to the end. ``Gate`` (``loop_helpers``) counts each
request at 4 characters a token, refuses one over its limit with the API's own error and
answers the others with usage that counts them.
"""

from __future__ import annotations

from context_compact import Compactor, MemoryStore, Policy

TURNS = 60
LIMIT = 8_000
MODES = {"equal": LIMIT, "below": int(0.5 * LIMIT)}


def part(k: int) -> str:
    """The output of ``read_log(k)``: 3,000 to 6,000 characters, opening with a word found
    nowhere else."""
    size = 3_000 + (k * 7_919 % 31) * 100
    line = f"log {k:03d}: worker={k % 7} status=ok latency={k * 13 % 97}ms\n"
    body = (line * (size // len(line) + 1))[:size]
    return f"needle-{k:03d}\n{body}"


def history_tokens(turns: int = TURNS) -> int:
    """Every result's text, in tokens: what a request carrying them all would hold at least."""
    return sum(len(part(k)) for k in range(turns)) // 4


def compactor() -> Compactor:
    return Compactor(Policy.default(context_limit=LIMIT), MemoryStore())


def lost(cc: Compactor, turns: int = TURNS) -> list[int]:
    """The results no ``recall`` of their word gives back whole."""
    return [
        k
        for k in range(turns)
        if part(k).strip() not in cc.recall(f"needle-{k:03d}", limit=50_000).text
    ]
