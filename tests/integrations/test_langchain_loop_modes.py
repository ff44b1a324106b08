"""LangChain's ``create_agent`` with ``CompactionMiddleware``, as its docs write it, thinking
on, against the stub Anthropic API: 64 tool turns of 2-40 KB results in both modes
(``loop_helpers``), every refusal recovered, the graph state whole."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain.agents.middleware")
pytest.importorskip("langchain_anthropic")

from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from loop_helpers import (
    MODES,
    THINKING,
    TURNS,
    Gate,
    compactor,
    lost,
    replies,
    result,
    size,
    within_or_retried,
)

import api_rules
from context_compact import check
from context_compact.integrations.langchain import CompactionMiddleware
from stub_api import StubAPI, anthropic_prompt_too_long


@pytest.fixture(autouse=True)
def _no_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
        monkeypatch.setenv(name, "false")


@tool
def read_log(part: int) -> str:
    """Read one part of the service log."""
    return result(part)


@pytest.mark.parametrize("mode", MODES)
def test_a_langchain_agent_runs_64_tool_turns_and_recovers_every_refusal(mode: str) -> None:
    limit = MODES[mode]
    gate = Gate(replies(thinking=THINKING), limit, anthropic_prompt_too_long)
    cc = compactor()
    with StubAPI(*gate.script()) as stub:
        model = ChatAnthropic(
            base_url=stub.url,
            model="claude-test",
            api_key="sk-stub",
            max_retries=0,
            max_tokens=1024,
            thinking={"type": "enabled", "budget_tokens": 512},
        )
        agent = create_agent(
            model, [read_log], system_prompt="You read logs.", middleware=[CompactionMiddleware(cc)]
        )
        state: Any = agent.invoke(
            {"messages": [HumanMessage("read every log part")]}, {"recursion_limit": 1000}
        )
    bodies = stub.bodies
    assert len(bodies) == TURNS + 1 + gate.refused
    assert [f"{i}: {v}" for i, b in enumerate(bodies) for v in check(b["messages"])] == []
    assert within_or_retried([size(b) for b in bodies], limit) == []
    if mode == "below":
        assert gate.refused > 0
    assert lost(cc) == []
    outputs = [m.content for m in state["messages"] if isinstance(m, ToolMessage)]
    assert outputs == [result(k) for k in range(TURNS)]
    last = bodies[-1]["messages"]
    thinking = last[-2]["content"][0]
    assert thinking["type"] == "thinking"
    assert thinking["signature"] == api_rules.sign(thinking["thinking"])
    assert last[-1]["content"][0]["tool_use_id"] == f"call_{TURNS - 1:03d}"
