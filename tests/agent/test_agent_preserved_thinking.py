"""The CLI's agent loop on a model that binds its thinking to its prefix, against the test
API (``api_binding``): the agent's own compactions never send a voided block, and a model
the agent does not know to check is recovered from its first refusal within one retry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from context_compact import Compactor, MemoryStore, Policy
from context_compact.agent.loop import Agent
from context_compact.agent.tools import Workspace
from context_compact.providers.anthropic import AnthropicProvider
from context_compact.sizing import TokenCounter
from stub_api import Reply, StubAPI, ToolCall

STEPS = 60


def _files(root: Path) -> None:
    for k in range(STEPS):
        size = 1_500 + (k * 7_919) % 3_000
        (root / f"part_{k:02d}.txt").write_text(f"part {k}\n" + "x" * size + "\n")


class Model:
    def __init__(self) -> None:
        self.step = 0
        self.counter = TokenCounter()

    def __call__(self, body: dict[str, Any]) -> Reply:
        # The usage the API would report: the whole request, as our estimate counts it.
        tokens = sum(self.counter.count(m) for m in body["messages"])
        tokens += self.counter.text(json.dumps([body.get("system"), body.get("tools")]))
        thought = f"Step {self.step}: {len(body['messages'])} messages so far."
        if self.step >= STEPS:
            return Reply(text="All parts read.", thinking=thought, input_tokens=tokens)
        call = ToolCall("read_file", {"path": f"part_{self.step:02d}.txt"})
        self.step += 1
        return Reply(tool_calls=(call,), thinking=thought, input_tokens=tokens)


@pytest.mark.parametrize(
    ("model", "checks", "refused"),
    [
        ("claude-fable-5-2", None, 0),
        ("gateway-alias", True, 1),
    ],
)
def test_the_agent_loop_sends_no_voided_thinking_block(
    tmp_path: Path, model: str, checks: bool | None, refused: int
) -> None:
    _files(tmp_path)
    compactor = Compactor(Policy.default(context_limit=4_096), MemoryStore())
    script = Model()
    with StubAPI(checks=checks) as stub:
        stub.enqueue(*([script] * (2 * STEPS)))
        provider = AnthropicProvider(model, api_key="sk-ant-test", base_url=stub.url, timeout=5)
        try:
            result = Agent(provider, compactor, Workspace(tmp_path), max_turns=100).run(
                [], "Read every part."
            )
        finally:
            provider.close()
        assert len(stub.refusals) == refused, stub.refusals
    assert result.text == "All parts read."
    assert any(e.stage == "strip_thinking" for e in compactor.events)
