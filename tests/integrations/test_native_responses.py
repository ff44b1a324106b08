"""The native tier on the OpenAI Responses API: ``compacting(openai.OpenAI(), ...)`` under
``native=True`` asks the ``compact`` endpoint for each summary and sends the encrypted
``compaction`` item first, unchanged, from then on. The stub's ``/v1/responses/compact``
answers as the API documents it: every user message, then one compaction item."""

from __future__ import annotations

import json
import random
from typing import Any

import openai

from context_compact import Compactor, MemoryStore, Policy
from context_compact.integrations import compacting
from context_compact.messages import as_dicts
from context_compact.sizing import TokenCounter
from context_compact.testing.reach import reach
from stub_api import Reply, StubAPI, ToolCall, openai_input_exceeds_context_window

TASK = "Migrate every module to the new logging API."
INSTRUCTIONS = "You are a careful migration agent."
TOOLS = [{"type": "function", "name": "bash", "parameters": {"type": "object"}}]
WINDOW = 20_000
STEPS = 64


class Server:
    """The model (answers from what was sent; refuses over the window) and the compact
    endpoint (issues items, remembers them)."""

    def __init__(self) -> None:
        self.counter = TokenCounter()
        self.step = 0
        self.issued: list[dict[str, Any]] = []
        self.compact_bodies: list[Any] = []
        self.refused = 0

    def tokens(self, body: dict[str, Any]) -> int:
        return self.counter.text(json.dumps(body["input"]) + INSTRUCTIONS + json.dumps(TOOLS))

    def __call__(self, body: dict[str, Any]) -> Any:
        tokens = self.tokens(body)
        if tokens > WINDOW:
            self.refused += 1
            return openai_input_exceeds_context_window()
        if self.step >= STEPS:
            return Reply(text="Done.", input_tokens=tokens)
        self.step += 1
        call = ToolCall("bash", {"command": f"migrate module_{self.step}"})
        return Reply(tool_calls=(call,), input_tokens=tokens)

    def compact(self, body: dict[str, Any]) -> dict[str, Any]:
        self.compact_bodies.append(body)
        item = {
            "type": "compaction",
            "id": f"cmp_{len(self.issued):04d}",
            "encrypted_content": f"gAAAA-stub-{len(self.issued):04d}",
        }
        self.issued.append(item)
        users = [i for i in body["input"] if isinstance(i, dict) and i.get("role") == "user"]
        return {
            "id": f"resp_cmp_{len(self.issued)}",
            "object": "response.compaction",
            "created_at": 0,
            "output": [*users, item],
            "usage": {
                "input_tokens": 100,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 50,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 150,
            },
        }


def test_the_responses_loop_under_the_native_tier_sends_the_compaction_item_first() -> None:
    rng = random.Random(3)
    server = Server()
    store = MemoryStore()
    compactor = Compactor(Policy.default(context_limit=WINDOW, native=True), store)
    items: list[Any] = [{"role": "user", "content": TASK}]
    sent: list[str] = []
    with StubAPI() as stub:
        stub.routes["POST /v1/responses/compact"] = server.compact
        stub.enqueue(*([server] * (3 * STEPS)))
        client = compacting(
            openai.OpenAI(base_url=stub.openai_url, api_key="sk-stub", max_retries=0), compactor
        )
        for _ in range(STEPS + 1):
            response = client.responses.create(
                model="gpt-test", instructions=INSTRUCTIONS, tools=TOOLS, input=items
            )
            calls = [o for o in response.output if o.type == "function_call"]
            items += [o.model_dump(exclude_none=True) for o in response.output]
            if not calls:
                break
            for call in calls:
                sent.append(
                    f"module_{len(sent)}.py: 3 logger calls replaced\n" * rng.randint(60, 400)
                )
                items.append(
                    {"type": "function_call_output", "call_id": call.call_id, "output": sent[-1]}
                )
        bodies = [r.body for r in stub.requests if r.path == "/v1/responses"]
    assert server.step == STEPS
    assert server.issued, "the compact endpoint was never asked"
    assert all(b["model"] == "gpt-test" for b in server.compact_bodies)
    # From the first item on, every request opens with the newest item, unchanged.
    first = next(i for i, b in enumerate(bodies) if b["input"][0].get("type") == "compaction")
    for body in bodies[first:]:
        assert body["input"][0] in server.issued
    assert bodies[-1]["input"][0] == server.issued[-1]
    assert not [e for e in compactor.events if e.stage == "native_fallback"]
    assert server.refused == 0
    found = reach(as_dicts(compactor.view()), store, store.root, sent, max_reads=2)
    assert found.lost == 0, found.lost_items[:3]
    assert "module_0.py" in compactor.recall("module_0.py").text
