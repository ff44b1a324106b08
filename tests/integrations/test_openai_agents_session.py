"""CompactingSession driven through the OpenAI Agents SDK's own runner (``Runner.run`` with
``OpenAIChatCompletionsModel``) against the stub OpenAI API: every request valid, the inner
session whole, the view compacted."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("agents")

from adapter_helpers import LIMIT, compactor, counted, log_part, stages, tokens
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    SQLiteSession,
    function_tool,
)
from openai import AsyncOpenAI

from context_compact import check
from context_compact.integrations.openai_agents import CompactingSession
from context_compact.providers.openai_chat import from_openai
from stub_api import Reply, StubAPI, ToolCall

RUNS = 55


@function_tool
def read_log(part: int) -> str:
    """Read one part of the service log."""
    return log_part(part)


def _script(runs: int) -> list[Any]:
    """Each run: the model reads one part, then answers."""
    out = []
    for k in range(runs):
        call = ToolCall("read_log", {"part": k}, id=f"call_{k:03d}")
        out += [counted(Reply(tool_calls=(call,))), counted(Reply(text=f"part {k} read"))]
    return out


def chat_violations(bodies: list[Any]) -> list[str]:
    return [
        f"request {i}: {v}"
        for i, body in enumerate(bodies)
        for v in check(from_openai(body["messages"])[1])
    ]


async def _runs(stub: StubAPI, session: CompactingSession, runs: int) -> None:
    client = AsyncOpenAI(base_url=stub.openai_url, api_key="sk-stub", max_retries=0)
    model = OpenAIChatCompletionsModel("claude-test", client)
    agent = Agent(name="reader", instructions="You read logs.", model=model, tools=[read_log])
    config = RunConfig(tracing_disabled=True)
    for k in range(runs):
        await Runner.run(agent, f"read log part {k}", session=session, run_config=config)
    await client.close()


def test_an_agents_sdk_session_runs_55_runs_with_every_request_valid_and_every_item_kept() -> None:
    cc = compactor()
    inner = SQLiteSession("reader")
    session = CompactingSession(inner, cc)
    with StubAPI(*_script(RUNS)) as stub:
        asyncio.run(_runs(stub, session, RUNS))
    bodies = stub.bodies
    assert len(bodies) == 2 * RUNS
    assert chat_violations(bodies) == []
    assert max(tokens(bodies)) <= LIMIT
    # A run's result was seen within that run, so the next run's view clears (never persists) it.
    assert {"clear_old_results", "summarize"} <= stages(cc)
    # The inner session has every item, every output in full.
    stored = asyncio.run(inner.get_items())
    outputs = [i["output"] for i in stored if i.get("type") == "function_call_output"]
    assert outputs == [log_part(k) for k in range(RUNS)]
    view = asyncio.run(session.get_items())
    assert len(json.dumps(view)) < len(json.dumps(stored)) / 4
    assert view[0] == stored[0]  # the first request is pinned, the stored item itself
    inner.close()
