"""prepare() per call in each caller format: the SDK docs' loop, appending to the returned list.

    python benchmarks/formats_overhead.py [turns]

Prints p50/p99 ms of ``Compactor.prepare`` for the same 1,000-turn tool session written as
Anthropic messages, OpenAI chat messages and Responses items (MemoryStore, 12,500 tokens).
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

from context_compact import Compactor, MemoryStore, Policy
from context_compact.testing.fakes import BenchSummarizer

OUT = "line of build output\n" * 150


def turn(kind: str, i: int) -> list[dict[str, Any]]:
    cid = f"call_{i}"
    if kind == "anthropic":
        use = {"type": "tool_use", "id": cid, "name": "bash", "input": {"cmd": f"make {i}"}}
        result = {"type": "tool_result", "tool_use_id": cid, "content": OUT}
        return [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    if kind == "openai-chat":
        fn = {"name": "bash", "arguments": f'{{"cmd": "make {i}"}}'}
        return [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": cid, "type": "function", "function": fn}],
            },
            {"role": "tool", "tool_call_id": cid, "content": OUT},
        ]
    return [
        {
            "type": "function_call",
            "id": f"fc_{i}",
            "call_id": cid,
            "name": "bash",
            "arguments": f'{{"cmd": "make {i}"}}',
        },
        {"type": "function_call_output", "call_id": cid, "output": OUT},
    ]


def main(turns: int) -> None:
    for kind in ("anthropic", "openai-chat", "openai-responses"):
        c = Compactor(
            Policy.default(context_limit=12_500), MemoryStore(), BenchSummarizer(), format=kind
        )
        items: list[Any] = [{"role": "user", "content": "build it"}]
        times = []
        for i in range(turns):
            start = time.perf_counter()
            items = c.prepare(items, "build it")
            times.append((time.perf_counter() - start) * 1000)
            items += turn(kind, i)
        times.sort()
        p99 = times[int(len(times) * 0.99)]
        print(
            f"{kind:18} p50 {statistics.median(times):.3f} ms  p99 {p99:.3f} ms"
            f"  events {len(c.events)}"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
