"""``CompactionCapability`` in pydantic-ai's own agent loop, as its docs write it
(``Agent(model, capabilities=[...])``, ``@agent.tool_plain``, ``agent.run``), thinking on,
against the stub Anthropic API: 64 tool turns of 2-40 KB results in both modes
(``loop_helpers``), tool schemas counted, every refusal recovered once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("pydantic_ai.capabilities")

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
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.models.anthropic import AnthropicModel, AnthropicModelSettings
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.usage import UsageLimits

import api_rules
from context_compact import check
from context_compact.integrations.pydantic_ai import CompactionCapability
from stub_api import StubAPI, anthropic_prompt_too_long

TASK = "read every part of the service log"
SCHEMA_WORDS = "a very long description of the part parameter " * 200


def _agent(stub: StubAPI, capability: CompactionCapability) -> Agent[None, str]:
    model = AnthropicModel(
        "claude-test", provider=AnthropicProvider(base_url=stub.url, api_key="sk-stub")
    )
    settings = AnthropicModelSettings(
        anthropic_thinking={"type": "enabled", "budget_tokens": 512}, max_tokens=1024
    )
    agent = Agent(
        model,
        instructions="You read logs.",
        capabilities=[capability],
        model_settings=settings,
        retries=0,
    )

    @agent.tool_plain
    def read_log(part: int) -> str:
        """Read one part of the service log."""
        return result(part)

    return agent


def _run(agent: Agent[None, str]) -> Any:
    return asyncio.run(agent.run(TASK, usage_limits=UsageLimits(request_limit=None)))


@pytest.mark.parametrize("mode", MODES)
def test_a_pydantic_ai_agent_runs_64_tool_turns_and_recovers_every_refusal(mode: str) -> None:
    limit = MODES[mode]
    gate = Gate(replies(thinking=THINKING), limit, anthropic_prompt_too_long)
    cc = compactor()
    with StubAPI(*gate.script()) as stub:
        run = _run(_agent(stub, CompactionCapability(cc)))
    assert run.output == "all parts read"
    bodies = stub.bodies
    assert len(bodies) == TURNS + 1 + gate.refused
    assert [f"{i}: {v}" for i, b in enumerate(bodies) for v in check(b["messages"])] == []
    assert within_or_retried([size(b) for b in bodies], limit) == []
    if mode == "below":
        assert gate.refused > 0
    assert lost(cc) == []
    last = bodies[-1]["messages"]
    thinking = last[-2]["content"][0]
    assert thinking["type"] == "thinking"
    assert thinking["signature"] == api_rules.sign(thinking["thinking"])
    assert last[-2]["content"][-1]["id"] == last[-1]["content"][0]["tool_use_id"]
    assert last[-1]["content"][0]["tool_use_id"] == f"call_{TURNS - 1:03d}"


def test_tool_schemas_count_into_the_budget() -> None:
    cc = compactor()
    with StubAPI(*replies(0)) as stub:
        agent = _agent(stub, CompactionCapability(cc))

        @agent.tool_plain(description=SCHEMA_WORDS)
        def lookup(query: str) -> str:
            return query

        _run(agent)
    assert any(t.get("description") == SCHEMA_WORDS for t in stub.bodies[0]["tools"])
    # The request's fixed part (instructions and both tools' schemas) is in every budget.
    assert cc._overhead.of("request") > cc.tokens.text(SCHEMA_WORDS)


def test_a_second_refusal_propagates() -> None:
    cc = compactor()
    refusals = [anthropic_prompt_too_long() for _ in range(3)]
    with StubAPI(*refusals) as stub:
        agent = _agent(stub, CompactionCapability(cc))
        with pytest.raises(ModelHTTPError):
            _run(agent)
    assert len(stub.bodies) == 2
