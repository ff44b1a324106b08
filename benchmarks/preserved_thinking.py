"""Preserved thinking: what the default does on a model that binds thinking to its prefix.

Runs the Anthropic SDK docs' tool loop through ``compacting(anthropic.Anthropic(...))``
against the repository's test API (``tests/stub_api.py``, loopback, no network), on a model
that runs the prefix check, with a reply that thinks at every step (interleaved thinking):

* ``tool loop``: one request, then ``--steps`` tool calls;
* ``chat``: a new user message every 8 steps.

Results are 0.2-3 KB (80%), 5-20 KB (15%) and 40-120 KB (5%), seeded. Each row: the API's
mode (``error``: refuse, ``drop``: drop and list), our summary or the provider's (``native``:
the policy's native tier, each summary an on-demand compaction request), requests, requests
that failed the prefix check (refused, or with blocks dropped), the share of the replies whose
thinking the next request still sends, strips, summaries and compaction requests.

    python benchmarks/preserved_thinking.py --window 20000 --steps 300
    python benchmarks/preserved_thinking.py --window 50000 --steps 600
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import anthropic

from context_compact import Compactor, MemoryStore, Policy
from context_compact.integrations import compacting
from context_compact.sizing import TokenCounter
from context_compact.testing.fakes import BenchSummarizer
from stub_api import Reply, StubAPI, ToolCall, anthropic_prompt_too_long

TOOLS = [{"name": "bash", "description": "Run a command", "input_schema": {"type": "object"}}]
MODEL = "claude-fable-5-2"


def result(step: int) -> str:
    rng = random.Random(step)
    pick = rng.random()
    size = (
        rng.randint(200, 3_000)
        if pick < 0.8
        else rng.randint(5_000, 20_000)
        if pick < 0.95
        else rng.randint(40_000, 120_000)
    )
    line = f"step {step}: src/module_{step}.py: replaced 3 logger calls; tests ok\n"
    return (line * (size // len(line) + 1))[:size]


class Model:
    def __init__(self, window: int, steps: int, chat: bool) -> None:
        self.window, self.steps, self.chat, self.step = window, steps, chat, 0
        self.counter = TokenCounter()
        self.followed = self.kept = 0
        self._last: str | None = None

    def __call__(self, body: dict[str, Any]) -> Any:
        tokens = sum(self.counter.count(m) for m in body["messages"])
        if tokens > self.window:
            return anthropic_prompt_too_long(tokens, self.window)
        sent = {
            b.get("thinking")
            for m in body["messages"]
            if isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "thinking"
        }
        if self._last is not None:
            self.followed += 1
            self.kept += self._last in sent
        self._last = f"Plan for step {self.step} after {len(body['messages'])} messages."
        self.step += 1
        if self.step > self.steps:
            return Reply(text="Done.", thinking=self._last, input_tokens=tokens)
        if self.chat and self.step % 8 == 0:
            return Reply(text=f"Part {self.step} done.", thinking=self._last, input_tokens=tokens)
        call = ToolCall("bash", {"command": f"migrate module_{self.step}"})
        return Reply(tool_calls=(call,), thinking=self._last, input_tokens=tokens)


def run(window: int, steps: int, chat: bool, binding: str, native: bool) -> dict[str, Any]:
    model = Model(window, steps, chat)
    policy = Policy.default(context_limit=window, native=native)
    compactor = Compactor(policy, MemoryStore(), BenchSummarizer())
    with StubAPI(binding=binding) as stub:
        stub.enqueue(*([model] * (3 * steps + 10)))
        client = compacting(
            anthropic.Anthropic(base_url=stub.url, api_key="bench", max_retries=0), compactor
        )
        messages: list[Any] = [{"role": "user", "content": "Migrate every module."}]
        while model.step <= steps:
            response = client.messages.create(
                model=MODEL,
                max_tokens=2048,
                thinking={"type": "adaptive"},
                tools=TOOLS,
                messages=messages,
            )
            messages.append({"role": "assistant", "content": response.content})
            uses = [b for b in response.content if b.type == "tool_use"]
            if uses:
                results = [
                    {"type": "tool_result", "tool_use_id": u.id, "content": result(model.step)}
                    for u in uses
                ]
                messages.append({"role": "user", "content": results})
            elif model.step <= steps:
                messages.append({"role": "user", "content": f"Go on with part {model.step}."})
        failed = len(stub.refusals) + sum(1 for d in stub.dropped if d)
        compactions = (
            stub.compactions.requests_answered
            if hasattr(stub.compactions, "requests_answered")
            else None
        )
        requests = len(stub.requests)
    stages = [e.stage for e in compactor.events]
    return {
        "requests": requests,
        "failed": failed,
        "kept": model.kept / model.followed if model.followed else 1.0,
        "strips": stages.count("strip_thinking"),
        "summaries": stages.count("summarize") + stages.count("compact_history"),
        "provider_summaries": sum(1 for e in compactor.events if "by the provider" in e.note),
        "compaction_requests": compactions,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=20_000)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    print(f"window {args.window:,}, {args.steps} steps, model {MODEL}, thinking at every step\n")
    print(
        "| loop | API mode | summary | requests | failed the check | thinking kept | "
        "strips | summaries | by the provider |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for chat in (False, True):
        for binding in ("error", "drop"):
            for native in (False, True):
                row = run(args.window, args.steps, chat, binding, native)
                print(
                    f"| {'chat' if chat else 'tool loop'} | {binding} | "
                    f"{'native' if native else 'ours'} | {row['requests']} | {row['failed']} | "
                    f"{row['kept']:.1%} | {row['strips']} | {row['summaries']} | "
                    f"{row['provider_summaries']} |"
                )


if __name__ == "__main__":
    main()
