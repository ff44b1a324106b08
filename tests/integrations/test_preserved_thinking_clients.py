"""The SDK docs' tool loop with thinking on, through ``compacting(anthropic client)``, against
the test API on a model that binds each thinking block to its prefix (``api_binding``).

Each reply thinks (interleaved thinking); results are 0.2-20 KB, so compaction comes every
few steps at the 20,000-token window. Checked: no request fails the prefix check, in the
API's default mode (a 400) and in drop mode; most thinking one request produced is still
sent by the next; sync, async and streaming calls alike; a model the compactor does not
know to check is learned from its first refusal or dropped-blocks list, recovered within
one retry; ``drop_block`` goes out with its beta header and stays with a resumed session.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import pytest

from context_compact import Compactor, MemoryStore, Policy
from context_compact.integrations import compacting
from context_compact.sizing import TokenCounter
from context_compact.testing.fakes import BenchSummarizer
from stub_api import Reply, StubAPI, ToolCall, anthropic_prompt_too_long

TOOLS = [{"name": "bash", "description": "Run a command", "input_schema": {"type": "object"}}]
WINDOW = 20_000
STEPS = 80


def result(step: int) -> str:
    size = 200 + (step * 7_919) % 2_800 if step % 9 else 9_000
    line = f"step {step}: src/module_{step}.py: replaced 3 logger calls; tests ok\n"
    return (line * (size // len(line) + 1))[:size]


class Model:
    """Answers from what was sent: a thought and a tool call per step, a text at the end;
    counts the thinking of each reply that the next request still sends."""

    def __init__(self) -> None:
        self.step = 0
        self.counter = TokenCounter()
        self.produced = self.kept = 0
        self._last: str | None = None

    def __call__(self, body: dict[str, Any]) -> Any:
        tokens = sum(self.counter.count(m) for m in body["messages"])
        if tokens > WINDOW:
            return anthropic_prompt_too_long(tokens, WINDOW)
        sent = {
            b.get("thinking")
            for m in body["messages"]
            if isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "thinking"
        }
        if self._last is not None:
            self.produced += 1
            self.kept += self._last in sent
        self._last = f"Plan for step {self.step} after {len(body['messages'])} messages."
        if self.step >= STEPS:
            return Reply(text="Done.", thinking=self._last, input_tokens=tokens)
        self.step += 1
        call = ToolCall("bash", {"command": f"migrate module_{self.step}"})
        return Reply(tool_calls=(call,), thinking=self._last, input_tokens=tokens)


def _append(messages: list[Any], response: Any) -> bool:
    messages.append({"role": "assistant", "content": response.content})
    uses = [b for b in response.content if b.type == "tool_use"]
    if uses:
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": u.id, "content": result(len(messages))}
                    for u in uses
                ],
            }
        )
    return bool(uses)


def run_sync(client: Any, model: str, streaming: bool) -> list[Any]:
    messages: list[Any] = [{"role": "user", "content": "Migrate every module."}]
    for _ in range(STEPS + 1):
        kwargs = dict(model=model, max_tokens=2048, thinking={"type": "adaptive"}, tools=TOOLS)
        if streaming:
            with client.messages.stream(messages=messages, **kwargs) as stream:
                response = stream.get_final_message()
        else:
            response = client.messages.create(messages=messages, **kwargs)
        if not _append(messages, response):
            break
    return messages


async def run_async(client: Any, model: str) -> list[Any]:
    messages: list[Any] = [{"role": "user", "content": "Migrate every module."}]
    for _ in range(STEPS + 1):
        response = await client.messages.create(
            model=model,
            max_tokens=2048,
            thinking={"type": "adaptive"},
            tools=TOOLS,
            messages=messages,
        )
        if not _append(messages, response):
            break
    return messages


def _compactor(store: MemoryStore | None = None) -> Compactor:
    return Compactor(
        Policy.default(context_limit=WINDOW), store or MemoryStore(), BenchSummarizer()
    )


@pytest.mark.parametrize("binding", ["error", "drop"])
@pytest.mark.parametrize("mode", ["sync", "stream", "async"])
def test_the_docs_loop_with_thinking_never_fails_the_prefix_check(mode: str, binding: str) -> None:
    model, compactor = Model(), _compactor()
    with StubAPI(binding=binding) as stub:
        stub.enqueue(*([model] * (3 * STEPS)))
        if mode == "async":
            raw = anthropic.AsyncAnthropic(base_url=stub.url, api_key="test", max_retries=0)
            asyncio.run(run_async(compacting(raw, compactor), "claude-fable-5-2"))
        else:
            raw = anthropic.Anthropic(base_url=stub.url, api_key="test", max_retries=0)
            run_sync(compacting(raw, compactor), "claude-fable-5-2", mode == "stream")
        assert stub.refusals == []
        assert not any(stub.dropped)
    assert model.step == STEPS
    assert model.kept / model.produced >= 0.85
    stages = [e.stage for e in compactor.events]
    assert stages.count("strip_thinking") >= 1


@pytest.mark.parametrize("binding", ["error", "drop"])
def test_a_model_not_known_to_check_is_learned_from_its_first_refusal_or_drop(
    binding: str,
) -> None:
    model, store = Model(), MemoryStore()
    compactor = _compactor(store)
    with StubAPI(binding=binding, checks=True) as stub:
        stub.enqueue(*([model] * (3 * STEPS)))
        raw = anthropic.Anthropic(base_url=stub.url, api_key="test", max_retries=0)
        run_sync(compacting(raw, compactor), "our-gateway-alias", False)
        refused_or_dropped = len(stub.refusals) + sum(1 for d in stub.dropped if d)
    assert model.step == STEPS
    assert refused_or_dropped == 1
    settings = [r for r in store.records(compactor.session_id) if r.get("kind") == "setting"]
    assert settings[0]["value"] is True
    assert settings[0]["source"] == ("refusal" if binding == "error" else "dropped")


def test_drop_block_goes_out_with_its_beta_header_and_stays_with_the_session() -> None:
    store = MemoryStore()
    compactor = _compactor(store)
    with StubAPI(Reply(text="one", thinking="a"), Reply(text="two", thinking="b")) as stub:
        raw = anthropic.Anthropic(base_url=stub.url, api_key="test", max_retries=0)
        client = compacting(raw, compactor, prefix_mismatch_behavior="drop_block")
        messages: list[Any] = [{"role": "user", "content": "Hello."}]
        response = client.messages.create(
            model="claude-fable-5-2",
            max_tokens=64,
            messages=messages,
            extra_headers={"anthropic-beta": "other-beta-2026-01-01"},
        )
        first = stub.requests[0]
        assert first.body["thinking"] == {
            "type": "adaptive",
            "block_binding": {"prefix_mismatch_behavior": "drop_block"},
        }
        assert first.headers["anthropic-beta"] == (
            "other-beta-2026-01-01,thinking-binding-controls-2026-08-01"
        )
        # A resumed session goes on asking it, with a client wrapped without the option.
        messages += [
            {"role": "assistant", "content": response.content},
            {"role": "user", "content": "Again."},
        ]
        resumed = Compactor(
            Policy.default(context_limit=WINDOW),
            store,
            BenchSummarizer(),
            session=compactor.session_id,
        )
        compacting(raw, resumed).messages.create(
            model="claude-fable-5-2", max_tokens=64, messages=messages
        )
        second = stub.requests[1]
    assert second.body["thinking"]["block_binding"] == {"prefix_mismatch_behavior": "drop_block"}
    assert "thinking-binding-controls-2026-08-01" in second.headers["anthropic-beta"]
    assert stub.refusals == []


def test_a_bad_prefix_mismatch_behavior_is_refused_in_one_line() -> None:
    raw = anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key="test")
    with pytest.raises(ValueError, match="prefix_mismatch_behavior must be"):
        compacting(raw, _compactor(), prefix_mismatch_behavior="drop")
