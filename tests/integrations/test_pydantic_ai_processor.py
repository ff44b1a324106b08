"""history_processor driven through pydantic-ai's own agent loop against the stub Anthropic
API: every request valid, tool calls and returns together, nothing lost from the store."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

pytest.importorskip("pydantic_ai")

from adapter_helpers import (
    LIMIT,
    TURNS,
    anthropic_violations,
    compactor,
    log_part,
    stages,
    tokens,
    tool_loop,
)
from pydantic_ai import Agent
from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.usage import UsageLimits

from context_compact.integrations.pydantic_ai import history_processor, sync_history_processor
from stub_api import StubAPI

try:
    from pydantic_ai.capabilities import ProcessHistory
except ImportError:  # pydantic-ai 1.x
    ProcessHistory = None


def _agent(stub: StubAPI, processor) -> Agent:  # type: ignore[no-untyped-def,type-arg]
    model = AnthropicModel(
        "claude-test", provider=AnthropicProvider(base_url=stub.url, api_key="sk-stub")
    )
    if ProcessHistory is None:
        agent = Agent(model, instructions="You read logs.", history_processors=[processor])
    else:
        agent = Agent(
            model, instructions="You read logs.", capabilities=[ProcessHistory(processor)]
        )

    @agent.tool_plain
    def read_log(part: int) -> str:
        """Read one part of the service log."""
        return log_part(part)

    return agent


def _check_run(stub: StubAPI, messages: list, cc) -> None:  # type: ignore[no-untyped-def,type-arg]
    bodies = stub.bodies
    assert len(bodies) == TURNS + 1
    assert anthropic_violations(bodies) == []
    assert max(tokens(bodies)) <= LIMIT
    assert {"persist_new_results", "clear_old_results"} <= stages(cc)
    # pydantic-ai keeps the processed history: every call it kept has its return, in the next
    # request, and the last message is the answer.
    for i, message in enumerate(messages):
        if isinstance(message, ModelResponse):
            calls = {p.tool_call_id for p in message.parts if isinstance(p, ToolCallPart)}
            if calls:
                after = messages[i + 1]
                assert isinstance(after, ModelRequest)
                assert calls <= {
                    p.tool_call_id for p in after.parts if isinstance(p, ToolReturnPart)
                }
    assert isinstance(messages[-1], ModelResponse)
    # Nothing lost: every result, in full, from the store in one recall.
    for k in range(TURNS):
        page = cc.recall(f"needle-{k:03d}", limit=20_000)
        assert page.hits >= 1 and log_part(k) in page.text


@pytest.fixture
def event_loop_for_run_sync() -> Iterator[None]:
    """``run_sync`` runs on the thread's current event loop and leaves it open; the test owns it."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield
    asyncio.set_event_loop(None)
    loop.close()


@pytest.mark.usefixtures("event_loop_for_run_sync")
def test_a_pydantic_ai_agent_runs_55_tool_turns_with_every_request_valid_and_nothing_lost() -> None:
    cc = compactor()
    with StubAPI(*tool_loop()) as stub:
        agent = _agent(stub, history_processor(cc))
        result = agent.run_sync("read every log part", usage_limits=UsageLimits(request_limit=None))
    _check_run(stub, result.all_messages(), cc)


def test_the_sync_processor_under_the_async_run_compacts_the_same_way() -> None:
    cc = compactor()
    with StubAPI(*tool_loop()) as stub:
        agent = _agent(stub, sync_history_processor(cc))
        result = asyncio.run(
            agent.run("read every log part", usage_limits=UsageLimits(request_limit=None))
        )
    _check_run(stub, result.all_messages(), cc)
