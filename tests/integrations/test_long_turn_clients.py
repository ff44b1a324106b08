"""The Anthropic SDK docs' tool loop with extended thinking on, one request and a long run of
tool calls, through ``compacting(anthropic.Anthropic(), ...)`` against the stub API.

The stub answers as the API does: it refuses a request that breaks the Messages API's rules
(``api_rules``: a final turn not opening with thinking, an altered thinking block, a broken
tool pair) and one over the window ("prompt is too long"); its model thinks at the start of
each turn only (no interleaved thinking), as Claude does without the interleaved-thinking beta.
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from api_rules import final_turn_opener
from context_compact import Compactor, MemoryStore, Policy
from context_compact.integrations import compacting
from context_compact.messages import as_dicts
from context_compact.sizing import TokenCounter
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.reach import reach
from stub_api import Reply, StubAPI, ToolCall, anthropic_prompt_too_long

TASK = "Migrate every module to the new logging API."
TOOLS = [{"name": "bash", "description": "Run a command", "input_schema": {"type": "object"}}]
THINKING = {"type": "enabled", "budget_tokens": 1024}


def result(step: int, chars: int) -> str:
    line = f"step {step}: src/module_{step}.py: replaced 3 logger calls; tests ok\n"
    return (line * (chars // len(line) + 1))[:chars]


class Model:
    """The stub's model: answers from what was sent, like the API."""

    def __init__(self, window: int, steps: int) -> None:
        self.window, self.steps, self.step = window, steps, 0
        self.counter = TokenCounter()
        self.sent: list[int] = []

    def __call__(self, body: dict[str, Any]) -> Any:
        tokens = sum(self.counter.count(m) for m in body["messages"])
        tokens += self.counter.text(str(body.get("system", ""))) + self.counter.text(str(TOOLS))
        if tokens > self.window:
            return anthropic_prompt_too_long(tokens, self.window)
        self.sent.append(tokens)
        thinks = final_turn_opener(body["messages"]) is None
        thought = f"Plan for step {self.step}." if thinks else None
        if self.step >= self.steps:
            return Reply(text="Done.", thinking=thought, input_tokens=tokens)
        call = ToolCall("bash", {"command": f"migrate module_{self.step}"})
        self.step += 1
        return Reply(tool_calls=(call,), thinking=thought, input_tokens=tokens)


@pytest.mark.parametrize(("window", "steps", "chars"), [(4_096, 150, 1_200), (20_000, 150, 6_000)])
def test_the_docs_loop_with_thinking_runs_a_long_turn_through_the_wrapped_client(
    window: int, steps: int, chars: int
) -> None:
    model = Model(window, steps)
    store = MemoryStore()
    compactor = Compactor(Policy.default(context_limit=window), store, BenchSummarizer())
    sent: list[str] = []
    with StubAPI() as stub:
        stub.enqueue(*([model] * (3 * steps)))
        client = compacting(
            anthropic.Anthropic(base_url=stub.url, api_key="test", max_retries=0), compactor
        )
        messages: list[Any] = [{"role": "user", "content": TASK}]
        for _ in range(steps + 1):
            response = client.messages.create(
                model="claude-test",
                max_tokens=2048,
                thinking=THINKING,
                tools=TOOLS,
                messages=messages,
            )
            messages.append({"role": "assistant", "content": response.content})
            uses = [b for b in response.content if b.type == "tool_use"]
            if not uses:
                break
            texts = [result(len(sent) + k, chars) for k in range(len(uses))]
            sent += texts
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": u.id, "content": t}
                        for u, t in zip(uses, texts, strict=True)
                    ],
                }
            )
        assert stub.refusals == []
    assert model.step == steps and messages[-1]["content"][-1].text == "Done."
    assert max(model.sent) <= window
    found = reach(as_dicts(compactor.view()), store, store.root, sent, max_reads=2)
    assert found.lost == 0, found.lost_items[:3]
