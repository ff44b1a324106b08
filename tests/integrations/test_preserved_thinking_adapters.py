"""The framework adapters on a model that binds its thinking to its prefix: LangChain's
``create_agent`` as its docs write it, thinking on, 64 tool turns against the test API with
the prefix check on (``api_binding``). The middleware tells the compactor the chat model's
name; a model it does not know to check is learned from its first refusal, recovered within
one retry."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain.agents.middleware")
pytest.importorskip("langchain_anthropic")

from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from loop_helpers import MODES, THINKING, TURNS, Gate, compactor, replies, result

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


@pytest.mark.parametrize(
    ("name", "checks", "refused"),
    [
        ("claude-fable-5-2", None, 0),
        ("our-gateway-alias", True, 1),
    ],
)
def test_a_langchain_agent_on_a_checking_model_sends_no_voided_thinking(
    name: str, checks: bool | None, refused: int
) -> None:
    limit = MODES["equal"]
    gate = Gate(replies(thinking=THINKING), limit, anthropic_prompt_too_long)
    cc = compactor()
    with StubAPI(*gate.script(), checks=checks) as stub:
        model = ChatAnthropic(
            base_url=stub.url,
            model=name,
            api_key="sk-stub",
            max_retries=0,
            max_tokens=1024,
            thinking={"type": "adaptive"},
        )
        agent = create_agent(
            model, [read_log], system_prompt="You read logs.", middleware=[CompactionMiddleware(cc)]
        )
        state: Any = agent.invoke(
            {"messages": [HumanMessage("read every log part")]}, {"recursion_limit": 1000}
        )
        refusals = [r for r in stub.refusals if "bound to a different conversation" in r]
    assert len(refusals) == refused
    assert [f"{i}: {v}" for i, b in enumerate(stub.bodies) for v in check(b["messages"])] == []
    outputs = [m.content for m in state["messages"] if isinstance(m, ToolMessage)]
    assert outputs == [result(k) for k in range(TURNS)]
    assert any(e.stage == "strip_thinking" for e in cc.events)


@pytest.mark.parametrize(
    ("name", "checks", "refused"),
    [
        ("claude-fable-5-2", None, 0),
        ("our-gateway-alias", True, 1),
    ],
)
def test_a_pydantic_ai_agent_on_a_checking_model_sends_no_voided_thinking(
    name: str, checks: bool | None, refused: int
) -> None:
    pytest.importorskip("pydantic_ai.capabilities")
    import asyncio

    from pydantic_ai import Agent
    from pydantic_ai.models.anthropic import AnthropicModel, AnthropicModelSettings
    from pydantic_ai.providers.anthropic import AnthropicProvider
    from pydantic_ai.usage import UsageLimits

    from context_compact.integrations.pydantic_ai import CompactionCapability

    gate = Gate(replies(thinking=THINKING), MODES["equal"], anthropic_prompt_too_long)
    cc = compactor()
    with StubAPI(*gate.script(), checks=checks) as stub:
        model = AnthropicModel(name, provider=AnthropicProvider(base_url=stub.url, api_key="sk"))
        agent = Agent(
            model,
            instructions="You read logs.",
            capabilities=[CompactionCapability(cc)],
            model_settings=AnthropicModelSettings(
                anthropic_thinking={"type": "adaptive"}, max_tokens=1024
            ),
            retries=0,
        )

        @agent.tool_plain
        def read_log(part: int) -> str:
            """Read one part of the service log."""
            return result(part)

        run = asyncio.run(
            agent.run("read every log part", usage_limits=UsageLimits(request_limit=None))
        )
        refusals = [r for r in stub.refusals if "bound to a different conversation" in r]
    assert run.output == "all parts read"
    assert len(refusals) == refused
    assert any(e.stage == "strip_thinking" for e in cc.events)
