"""One request, then only tool calls: what the default does inside a long turn, per window.

Drives ``Compactor.prepare`` as the SDK docs' loop does (append the assistant message, then
its results) for ``--steps`` steps in each window and thinking mode, the model thinking at
the start of each turn (``start``: Claude without interleaved thinking), at every step
(``interleaved``), or not at all (``off``). Prints a Markdown table: summaries and clearings
per 100 steps, the largest request as a share of the window, the final turn opening with
thinking on every request (``thinking ok``), and results lost (not in view nor two reads
away). All counts are deterministic (no timings: ``bench --scaling`` measures those).

    python benchmarks/long_turn.py --steps 1000
"""

from __future__ import annotations

import argparse
import random
from typing import Any

from context_compact import Compactor, MemoryStore, Policy
from context_compact.messages import opens_with_thinking, turn_opener
from context_compact.sizing import TokenCounter
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.reach import reach

REQUEST = "Port the parser to the new tokenizer and keep the tests green."
SHAPES = {4_096: (1, 1_200), 20_000: (3, 2_000), 50_000: (3, 2_000), 200_000: (3, 3_000)}
WORDS = ("parse", "token", "assert", "def", "return", "42", "None", "self", "\n")


def run(window: int, mode: str, steps: int) -> dict[str, Any]:
    per, chars = SHAPES[window]
    rng = random.Random(window)
    store = MemoryStore()
    summarizer = BenchSummarizer()
    compactor = Compactor(Policy.default(context_limit=window), store, summarizer)
    counter = TokenCounter()
    counted: dict[int, tuple[Any, int]] = {}

    def count(message: Any) -> int:
        # The view's messages are the same objects from call to call: each counted once.
        known = counted.get(id(message))
        if known is None or known[0] is not message:
            known = counted[id(message)] = (message, counter.count(message))
        return known[1]

    messages: list[Any] = [{"role": "user", "content": REQUEST}]
    results: list[str] = []
    largest, thinking_ok = 0, True
    for step in range(steps + 1):
        messages = compactor.prepare(messages, REQUEST)
        largest = max(largest, sum(map(count, messages)))
        opener = turn_opener(messages)
        if mode != "off" and opener is not None and not opens_with_thinking(opener):
            thinking_ok = False
        if step == steps:
            break
        thinks = mode == "interleaved" or (mode == "start" and opener is None)
        ids = [f"toolu_{step:05d}_{k}" for k in range(per)]
        content: list[Any] = []
        if thinks:
            content.append({"type": "thinking", "thinking": f"step {step}", "signature": "s"})
        content += [
            {"type": "tool_use", "id": i, "name": "bash", "input": {"command": f"cat {i}"}}
            for i in ids
        ]
        messages.append({"role": "assistant", "content": content})
        texts = [f"<{i}>\n" + " ".join(rng.choices(WORDS, k=chars // 5)) for i in ids]
        results += texts
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": i, "content": t}
                    for i, t in zip(ids, texts, strict=True)
                ],
            }
        )
    stages = [e.stage for e in compactor.events]
    found = reach(compactor.view(), store, store.root, results, max_reads=2)
    return {
        "window": window,
        "mode": mode,
        "summaries": 100 * summarizer.calls / steps,
        "clears": 100 * stages.count("clear_old_results") / steps,
        "closing": sum("the turn closed" in e.note for e in compactor.events),
        "peak": largest / window,
        "thinking_ok": thinking_ok,
        "lost": found.lost,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1_000)
    args = parser.parse_args()
    print(
        f"| window | thinking | summaries / 100 steps | of which closed the turn | "
        f"clearings / 100 steps | largest request / window | thinking ok | "
        f"lost |\n|{'---|' * 8}"
    )
    for window in SHAPES:
        for mode in ("start", "interleaved", "off"):
            r = run(window, mode, args.steps)
            print(
                f"| {window:,} | {mode} | {r['summaries']:.1f} | {r['closing']} | "
                f"{r['clears']:.1f} | {r['peak']:.2f} | {'yes' if r['thinking_ok'] else 'NO'} | "
                f"{r['lost']} |"
            )


if __name__ == "__main__":
    main()
