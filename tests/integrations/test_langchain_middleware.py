"""CompactionMiddleware driven through LangChain's own agent loop (``create_agent``) against
the stub Anthropic API: every request valid, the graph state whole, compaction at work."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("langchain.agents.middleware")
pytest.importorskip("langchain_anthropic")

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
from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from context_compact.integrations.langchain import CompactionMiddleware
from stub_api import StubAPI, anthropic_prompt_too_long, anthropic_rate_limit


@pytest.fixture(autouse=True)
def _no_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
        monkeypatch.setenv(name, "false")


@tool
def read_log(part: int) -> str:
    """Read one part of the service log."""
    return log_part(part)


def _agent(stub: StubAPI, middleware: CompactionMiddleware):  # type: ignore[no-untyped-def]
    model = ChatAnthropic(base_url=stub.url, model="claude-test", api_key="sk-stub", max_retries=0)
    return create_agent(model, [read_log], system_prompt="You read logs.", middleware=[middleware])


def _check_run(stub: StubAPI, state: dict, cc) -> None:  # type: ignore[no-untyped-def,type-arg]
    bodies = stub.bodies
    assert len(bodies) == TURNS + 1
    assert anthropic_violations(bodies) == []
    # The graph state keeps every result in full, in order.
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.content for m in results] == [log_part(k) for k in range(TURNS)]
    assert isinstance(state["messages"][-1], AIMessage)
    # What the model was sent stayed within the window while the state grew past it 7 times.
    assert max(tokens(bodies)) <= LIMIT < sum(len(log_part(k)) for k in range(TURNS)) // 28
    assert {"persist_new_results", "clear_old_results"} <= stages(cc)


def test_a_langchain_agent_runs_55_tool_turns_with_every_request_valid_and_the_state_whole() -> (
    None
):
    cc = compactor()
    with StubAPI(*tool_loop()) as stub:
        agent = _agent(stub, CompactionMiddleware(cc))
        state = agent.invoke(
            {"messages": [HumanMessage("read every log part")]}, {"recursion_limit": 1000}
        )
    _check_run(stub, state, cc)


def test_the_async_agent_loop_compacts_the_same_way() -> None:
    cc = compactor()
    with StubAPI(*tool_loop()) as stub:
        agent = _agent(stub, CompactionMiddleware(cc))
        state = asyncio.run(
            agent.ainvoke(
                {"messages": [HumanMessage("read every log part")]}, {"recursion_limit": 1000}
            )
        )
    _check_run(stub, state, cc)


def test_a_refusal_for_length_is_compacted_and_retried_once_with_a_smaller_valid_request() -> None:
    cc = compactor()
    script = tool_loop(12)
    script.insert(8, anthropic_prompt_too_long())
    with StubAPI(*script) as stub:
        agent = _agent(stub, CompactionMiddleware(cc))
        state = agent.invoke({"messages": [HumanMessage("read every log part")]})
    bodies = stub.bodies
    assert len(bodies) == 14
    assert anthropic_violations(bodies) == []
    assert tokens(bodies)[9] < tokens(bodies)[8] / 2
    assert bodies[8]["messages"][-1] == bodies[9]["messages"][-1]
    assert "clear_old_results" in stages(cc)
    assert [m.content for m in state["messages"] if isinstance(m, ToolMessage)] == [
        log_part(k) for k in range(12)
    ]


def test_errors_that_are_not_about_length_reach_the_caller_untouched() -> None:
    cc = compactor()
    with StubAPI(anthropic_rate_limit()) as stub:
        agent = _agent(stub, CompactionMiddleware(cc))
        with pytest.raises(Exception, match="rate limit"):
            agent.invoke({"messages": [HumanMessage("read every log part")]})
    assert len(stub.bodies) == 1
    assert cc.events == []
