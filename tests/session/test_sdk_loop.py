"""The Anthropic SDK docs' tool loop, with the real SDK against the stub API, through prepare.

The list ``prepare`` returned is appended to (``messages.append``), exactly as the docs write
it; the session is durable, so a new process continues it where it was.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import anthropic
import pytest

from context_compact import Compactor, MemoryStore, Policy, SqliteStore, check
from context_compact.testing.fakes import BenchSummarizer
from stub_api import Reply, StubAPI, ToolCall

TOOLS = [{"name": "bash", "description": "run", "input_schema": {"type": "object"}}]
OUTPUT = "line of build output that goes on for a while\n" * 120


def loop(
    client: anthropic.Anthropic, compactor: Compactor, messages: list[Any], raw: bool = False
) -> list[Any]:
    while True:
        messages = compactor.prepare(messages, "build it")
        assert check(messages) == []
        response = client.messages.create(
            model="claude-test", max_tokens=1000, messages=messages, tools=TOOLS
        )
        compactor.observe(response.usage)
        # The SDK docs append ``response.content`` as it is: a list of SDK objects.
        content = response.content if raw else [b.model_dump() for b in response.content]
        messages.append({"role": "assistant", "content": content})
        uses = [b for b in response.content if b.type == "tool_use"]
        if not uses:
            return messages
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": u.id, "content": OUTPUT} for u in uses
                ],
            }
        )


def test_the_sdk_docs_loop_logs_every_message_and_resumes_in_a_new_process(
    stub_api: StubAPI, tmp_path: Path
) -> None:
    def sized(reply: Reply) -> Any:
        # The API's usage counts what was sent, as the real one does.
        return lambda body: replace(reply, input_tokens=len(json.dumps(body)) // 4)

    turns = [Reply(tool_calls=(ToolCall("bash", {"command": f"make {i}"}),)) for i in range(30)]
    stub_api.enqueue(*map(sized, turns), sized(Reply(text="built")))
    client = anthropic.Anthropic(api_key="test", base_url=stub_api.url, max_retries=0)
    policy = Policy.default(context_limit=4_000)
    store = SqliteStore(tmp_path / "sessions.db")
    compactor = Compactor(policy, store, BenchSummarizer())
    final = loop(client, compactor, [{"role": "user", "content": "build it"}])
    assert final[-1]["content"][0]["text"] == "built"
    compactor.record(final)  # the answer is logged without a prepare
    sid = compactor.session_id
    assert sid is not None
    logged = [r for r in store.records(sid) if r["kind"] == "message"]
    assert len(logged) == 1 + 2 * 30 + 1  # the request, 30 tool turns, the answer
    assert any(e.stage == "summarize" for e in compactor.events)
    # Compaction kept every request inside the limit, as the API counts it.
    assert all(len(json.dumps(r.body)) // 4 <= policy.context_limit for r in stub_api.requests)
    assert max(len(r.body["messages"]) for r in stub_api.requests) < 2 * 30
    store.close()

    stub_api.enqueue(sized(Reply(text="and tested")))
    again = Compactor(policy, SqliteStore(tmp_path / "sessions.db"), BenchSummarizer(), session=sid)
    resumed = again.view()
    assert resumed == compactor.view()
    assert resumed[-1]["content"][0]["text"] == "built"
    resumed.append({"role": "user", "content": "now test it"})
    out = loop(client, again, resumed)
    assert out[-1]["content"][0]["text"] == "and tested"
    assert stub_api.requests[-1].body["messages"][: len(resumed) - 1] == resumed[:-1]
    again.store.close()


@pytest.mark.parametrize("policy", [Policy.default(context_limit=4_000), Policy.seed(echo=False)])
def test_sdk_objects_appended_as_they_come_back_are_accepted(
    stub_api: StubAPI, policy: Any
) -> None:
    def sized(reply: Reply) -> Any:
        return lambda body: replace(reply, input_tokens=len(json.dumps(body)) // 4)

    turns = [Reply(tool_calls=(ToolCall("bash", {"command": f"make {i}"}),)) for i in range(12)]
    stub_api.enqueue(*map(sized, turns), sized(Reply(text="built")))
    client = anthropic.Anthropic(api_key="test", base_url=stub_api.url, max_retries=0)
    compactor = Compactor(policy, MemoryStore(), BenchSummarizer())
    final = loop(client, compactor, [{"role": "user", "content": "build it"}], raw=True)
    assert final[-1]["content"][0].text == "built"
    assert len(stub_api.requests) == 13
    if compactor.keeps_log:
        assert not [e for e in compactor.events if e.stage == "session_restart"]
