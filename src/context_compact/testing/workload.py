"""Synthetic coding sessions from a seeded generator, for the bench and the policy simulation.

A session is a user request followed by turns; each turn is one assistant message with one
to three ``tool_use`` blocks and the user message with their results. Result sizes follow
the mix measured on real coding-agent sessions: 80% of 200-3,000 chars, 15% of 5,000-20,000, 5% of
40,000-120,000. Results look like what coding agents read: source files, test logs, grep
hits, build output. Every result carries one unique *planted fact* (``FACT-<turn>-<k>:
<hex>``) at a random place, so a bench can tell whether it is still in view, recoverable
through a reference, or lost. Same seed, same session, byte for byte.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from ..messages import Block, Message

_WORDS = [
    "config",
    "parser",
    "handler",
    "request",
    "response",
    "cache",
    "token",
    "buffer",
    "index",
    "schema",
    "worker",
    "queue",
    "session",
    "client",
    "server",
    "retry",
    "timeout",
    "payload",
    "record",
    "stream",
    "event",
    "filter",
    "render",
]


@dataclass(frozen=True)
class Turn:
    assistant: Message
    results: Message
    facts: tuple[str, ...]


@dataclass(frozen=True)
class Workload:
    name: str
    request: str
    turns: tuple[Turn, ...]

    @property
    def facts(self) -> list[str]:
        return [f for t in self.turns for f in t.facts]


def result_size(rng: random.Random) -> int:
    roll = rng.random()
    if roll < 0.80:
        return rng.randint(200, 3_000)
    if roll < 0.95:
        return rng.randint(5_000, 20_000)
    return rng.randint(40_000, 120_000)


def _code(rng: random.Random) -> str:
    name = rng.choice(_WORDS)
    other = rng.choice(_WORDS)
    return rng.choice(
        [
            f"def {name}_{other}(self, {other}):\n    return self._{name}.get({other}, None)\n",
            f"class {name.title()}{other.title()}:\n    '''Handle {name} for {other}.'''\n",
            f"    if not {name}:\n        raise ValueError('{other} is required')\n",
            f"import {name}\nfrom .{other} import {name.title()}\n",
        ]
    )


def _log(rng: random.Random) -> str:
    level = rng.choice(["INFO", "INFO", "DEBUG", "WARNING", "ERROR"])
    return (
        f"2026-11-{rng.randint(1, 28):02d} 12:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} "
        f"{level} {rng.choice(_WORDS)}.{rng.choice(_WORDS)}: {rng.choice(_WORDS)} "
        f"took {rng.randint(1, 999)}ms\n"
    )


def _grep(rng: random.Random) -> str:
    return (
        f"src/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}.py:{rng.randint(1, 900)}:    "
        f"{rng.choice(_WORDS)} = {rng.choice(_WORDS)}({rng.randint(0, 99)})\n"
    )


def result_text(rng: random.Random, size: int, fact: str) -> str:
    line = rng.choice([_code, _log, _grep])
    parts: list[str] = []
    length = 0
    while length < size:
        piece = line(rng)
        parts.append(piece)
        length += len(piece)
    text = "".join(parts)[: max(0, size - len(fact) - 2)]
    at = rng.randint(0, len(text))
    at = text.rfind("\n", 0, at) + 1
    return text[:at] + fact + "\n" + text[at:]


def _call(rng: random.Random, tool_id: str) -> Block:
    kind = rng.choice(["read_file", "read_file", "bash", "grep"])
    if kind == "read_file":
        inp: dict[str, Any] = {"path": f"src/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}.py"}
        name = "read_file"
    elif kind == "bash":
        inp = {"command": rng.choice(["pytest -x -q", "make build", "git log -n 50", "ls -R src"])}
        name = "bash"
    else:
        inp = {"command": f"grep -rn {rng.choice(_WORDS)} src"}
        name = "bash"
    return {"type": "tool_use", "id": tool_id, "name": name, "input": inp}


def synthetic_session(turns: int = 300, seed: int = 0, multi_call_share: float = 0.2) -> Workload:
    """A reproducible coding session of ``turns`` tool turns."""
    rng = random.Random(seed)
    out = []
    for t in range(turns):
        n = rng.choice([2, 3]) if rng.random() < multi_call_share else 1
        calls: list[Block] = []
        results: list[Block] = []
        facts: list[str] = []
        for k in range(n):
            tool_id = f"toolu_{seed:02d}{t:04d}{k}"
            fact = f"FACT-{t}-{k}: {rng.getrandbits(48):012x}"
            calls.append(_call(rng, tool_id))
            text = result_text(rng, result_size(rng), fact)
            results.append({"type": "tool_result", "tool_use_id": tool_id, "content": text})
            facts.append(fact)
        thought: Block = {
            "type": "text",
            "text": f"Step {t + 1}: checking {rng.choice(_WORDS)} next.",
        }
        out.append(
            Turn(
                {"role": "assistant", "content": [thought, *calls]},
                {"role": "user", "content": results},
                tuple(facts),
            )
        )
    request = "Fix the failing tests in the parser and keep the public API unchanged."
    return Workload(f"synthetic-{turns}x{seed}", request, tuple(out))
