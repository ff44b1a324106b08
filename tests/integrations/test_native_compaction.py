"""A provider's own compaction through ``compacting(anthropic.Anthropic(), ...)``, against
the stub API answering it in the API's shapes and refusing what the API refuses
(``stub_compaction``): the block first and unchanged, the same system prompt and tools.

The stub's window is 20k tokens, ten times smaller than a real one, so the edit's trigger
minimum is scaled down with it (the API's own is 50,000).
"""

from __future__ import annotations

import json
import random
from typing import Any

import anthropic

from context_compact import Compactor, MemoryStore, Policy
from context_compact.history.transfer import export_session
from context_compact.integrations import compacting
from context_compact.messages import as_dicts
from context_compact.session.native_tier import READABLE
from context_compact.session.records import NativeEdit, journal
from context_compact.sizing import TokenCounter
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.reach import reach
from stub_api import Reply, StubAPI, ToolCall, anthropic_prompt_too_long
from stub_compaction import Compactions

TASK = "Migrate every module to the new logging API."
SYSTEM = "You are a careful migration agent."
TOOLS = [{"name": "bash", "description": "Run a command", "input_schema": {"type": "object"}}]
WINDOW = 20_000
TRIGGER = 12_000
EDIT = {
    "edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": TRIGGER}}]
}


def result(step: int, chars: int) -> str:
    line = f"step {step}: src/module_{step}.py: replaced 3 logger calls; tests ok\n"
    return (line * (chars // len(line) + 1))[:chars]


class Model:
    """The stub's model: answers from what was sent, like the API; refuses a request over
    the window as the API does."""

    def __init__(self, window: int, steps: int) -> None:
        self.window, self.steps, self.step = window, steps, 0
        self.counter = TokenCounter()
        self.sent: list[int] = []

    def count(self, messages: list[Any]) -> int:
        return sum(self.counter.count(m) for m in messages)

    def __call__(self, body: dict[str, Any]) -> Any:
        tokens = self.count(body["messages"]) + self.counter.text(SYSTEM + str(TOOLS))
        if tokens > self.window:
            return anthropic_prompt_too_long(tokens, self.window)
        self.sent.append(tokens)
        if self.step >= self.steps:
            return Reply(text="Done.", input_tokens=tokens)
        call = ToolCall("bash", {"command": f"migrate module_{self.step}"})
        self.step += 1
        return Reply(tool_calls=(call,), input_tokens=tokens)


def run_loop(
    client: Any, steps: int, sizes: list[int], **extra: Any
) -> tuple[list[Any], list[str]]:
    """The SDK docs' tool loop: the caller's own list, the response appended as it is."""
    messages: list[Any] = [{"role": "user", "content": TASK}]
    sent: list[str] = []
    for _ in range(steps + 1):
        response = client.beta.messages.create(
            model="claude-test",
            max_tokens=2048,
            system=SYSTEM,
            tools=TOOLS,
            messages=messages,
            **extra,
        )
        messages.append({"role": "assistant", "content": response.content})
        uses = [b for b in response.content if b.type == "tool_use"]
        if not uses:
            if response.stop_reason == "compaction":
                continue
            break
        texts = [result(len(sent) + k, sizes[len(sent) + k]) for k in range(len(uses))]
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
    return messages, sent


def native_edits(store: MemoryStore, session: str) -> list[NativeEdit]:
    return [r for r in journal(store.records(session)) if isinstance(r, NativeEdit)]


def test_the_callers_own_compaction_edit_is_adopted_the_block_first_unchanged_nothing_lost() -> (
    None
):
    steps = 64
    rng = random.Random(7)
    sizes = [rng.randint(3_000, 20_000) for _ in range(steps + 4)]
    model = Model(WINDOW, steps)
    compactions = Compactions(count=model.count, minimum=TRIGGER)
    store = MemoryStore()
    compactor = Compactor(Policy.default(context_limit=WINDOW), store, BenchSummarizer())
    with StubAPI(compactions=compactions) as stub:
        stub.enqueue(*([model] * (3 * steps)))
        client = compacting(
            anthropic.Anthropic(base_url=stub.url, api_key="test", max_retries=0), compactor
        )
        messages, sent = run_loop(
            client, steps, sizes, context_management=EDIT, betas=["compact-2026-01-12"]
        )
        assert stub.refusals == []
        bodies = stub.bodies
    assert model.step == steps and messages[-1]["content"][-1].text == "Done."
    assert max(model.sent) <= WINDOW
    # The API compacted, and every later request opened with the newest block, unchanged.
    assert len(compactions.blocks) >= 2
    ends = [*compactions.issued_at[1:], len(bodies)]
    for block, start, end in zip(compactions.blocks, compactions.issued_at, ends, strict=True):
        assert end > start
        for body in bodies[start:end]:
            assert body["messages"][0]["content"][0] == block
    # Nothing lost: every result is in view or two reads away; the first is recalled.
    found = reach(as_dicts(compactor.view()), store, store.root, sent, max_reads=2)
    assert found.lost == 0, found.lost_items[:3]
    assert "step 0: src/module_0.py" in compactor.recall("module_0.py").text
    # A readable summary of ours kept beside each block, naming what it replaced.
    session = compactor.session_id
    assert session is not None
    edits = native_edits(store, session)
    assert len(edits) == len(compactions.blocks)
    assert all(e.archive and e.text and "module_" in e.text for e in edits)
    # Reopened from its journal, the session sends the same view.
    again = Compactor(Policy.default(context_limit=WINDOW), store, session=session)
    assert again.view() == compactor.view()
    # Exported for Chat Completions, which cannot read the block: our readable summary instead.
    exported = export_session(store, session, "openai", view=True)
    assert READABLE in exported and compactions.blocks[-1]["signature"] not in exported


def test_our_own_summaries_after_a_native_block_keep_it_first_and_unchanged() -> None:
    compactions = Compactions(minimum=0)
    made = {"messages": [{"role": "user", "content": TASK}], "system": SYSTEM, "tools": TOOLS}
    block = compactions._block(made)
    store = MemoryStore()
    compactor = Compactor(Policy.default(context_limit=3_000), store, BenchSummarizer())
    compactor.set_request(SYSTEM, TOOLS)
    history: list[Any] = [
        {"role": "user", "content": TASK},
        {"role": "assistant", "content": [{"type": "text", "text": "Starting."}]},
        {"role": "user", "content": "Go on."},
    ]
    sent: list[str] = []
    stages: set[str] = set()
    for step in range(30):
        content: list[Any] = [{"type": "tool_use", "id": f"t{step}", "name": "bash", "input": {}}]
        if step == 3:
            content.insert(0, block)
        history.append({"role": "assistant", "content": content})
        sent.append(result(step, 1_500))
        history.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"t{step}", "content": sent[-1]}
                ],
            }
        )
        view = compactor.prepare(history, TASK)
        stages.update(e.stage for e in compactor.events)
        if step >= 3:
            assert view[0] == {"role": "assistant", "content": view[0]["content"]}
            assert view[0]["content"][0] == block
            body = {"messages": view, "system": SYSTEM, "tools": TOOLS}
            assert compactions.violation(body) is None
    assert {"native_compaction", "summarize"} <= stages
    found = reach(as_dicts(compactor.view()), store, store.root, sent, max_reads=2)
    assert found.lost == 0, found.lost_items[:3]


def test_an_openai_responses_compaction_item_starts_the_view_and_what_it_replaced_is_recalled() -> (
    None
):
    store = MemoryStore()
    compactor = Compactor(
        Policy.default(context_limit=50_000), store, BenchSummarizer(), format="openai-responses"
    )
    item = {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA-opaque"}
    items: list[Any] = [{"role": "user", "content": TASK}]
    for step in range(4):
        call = {
            "type": "function_call",
            "call_id": f"c{step}",
            "name": "bash",
            "arguments": json.dumps({"command": f"migrate module_{step}"}),
        }
        if step == 2:
            items.append(item)
        items.append(call)
        items.append(
            {"type": "function_call_output", "call_id": f"c{step}", "output": result(step, 800)}
        )
    view = compactor.prepare(items, TASK)
    assert view[0] == item
    assert [v.get("call_id") for v in view[1:] if v.get("type") == "function_call"] == ["c2", "c3"]
    assert "step 0: src/module_0.py" in compactor.recall("module_0.py").text
    session = compactor.session_id
    assert session is not None
    (edit,) = native_edits(store, session)
    assert edit.archive is not None and edit.archive in str(view)
    assert "module_" in edit.text
