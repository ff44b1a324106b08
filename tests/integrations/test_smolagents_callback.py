"""smolagents' ``ToolCallingAgent`` as its docs write it (``OpenAIServerModel``, an ``@tool``,
``agent.run(task)``) with ``step_callbacks={ActionStep: [compaction_callback(cc)]}``, 64 tool
steps against the stub: every request compacted from the rewritten memory, nothing lost, a
refusal recovered through ``compacting_model``, two agents in two sessions; without the
callback the same run is refused once the memory passes the window."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import pytest

pytest.importorskip("smolagents")

from loop_helpers import MODES, TURNS, Gate, compactor, result, size
from smolagents import ActionStep, OpenAIServerModel, ToolCallingAgent, tool
from smolagents.utils import AgentGenerationError

from context_compact import Compactor, MemoryStore, Policy
from context_compact.integrations.conversations import Conversations
from context_compact.integrations.smolagents import (
    SummaryStep,
    compacting_model,
    compaction_callback,
)
from stub_api import Reply, StubAPI, ToolCall, openai_context_length_exceeded

TASK = "read every part of the service log"


@tool
def read_log(part: int) -> str:
    """Read one part of the service log.

    Args:
        part: the part to read.
    """
    return result(part)


def _replies(turns: int = TURNS, prefix: str = "call") -> list[Reply]:
    calls = [
        Reply(text=None, tool_calls=(ToolCall("read_log", {"part": k}, id=f"{prefix}_{k:03d}"),))
        for k in range(turns)
    ]
    done = ToolCall("final_answer", {"answer": "all parts read"}, id=f"{prefix}_done")
    return [*calls, Reply(tool_calls=(done,))]


def lost(cc: Compactor, turns: int = TURNS) -> list[int]:
    """The results no ``recall`` gives back whole (smolagents strips an observation)."""
    return [
        k
        for k in range(turns)
        if result(k).strip() not in cc.recall(f"needle-{k:03d}", limit=50_000).text
    ]


def _refusal(tokens: int, limit: int) -> Any:
    return openai_context_length_exceeded(limit, tokens)


def _agent(stub: StubAPI, callbacks: list[Any], wrap: Any = None, name: str | None = None) -> Any:
    model: Any = OpenAIServerModel(
        model_id="gpt-test",
        api_base=stub.openai_url,
        api_key="sk-stub",
        client_kwargs={"max_retries": 0},
    )
    if wrap is not None:
        model = compacting_model(model, wrap)
    agent = ToolCallingAgent(
        tools=[read_log],
        model=model,
        step_callbacks={ActionStep: callbacks},
        max_steps=TURNS + 5,
        verbosity_level=0,
        name=name,
    )
    if wrap is not None:
        model.agent = agent
    return agent


@pytest.mark.parametrize("mode", ["equal", "below"])
def test_a_run_of_64_tool_steps_is_compacted_at_every_step(mode: str) -> None:
    limit = MODES[mode]
    gate = Gate(_replies(), limit, _refusal)
    cc = compactor()
    callback = compaction_callback(cc)
    with StubAPI(*gate.script()) as stub:
        agent = _agent(stub, [callback], wrap=callback if mode == "below" else None)
        answer = agent.run(TASK)
    assert answer == "all parts read"
    bodies = stub.bodies
    assert len(bodies) == TURNS + 1 + gate.refused
    sizes = [size(b) for b in bodies]
    if mode == "equal":
        assert gate.refused == 0
    else:
        assert gate.refused > 0
        assert all(sizes[i + 1] <= limit for i, n in enumerate(sizes[:-1]) if n > limit)
    assert {e.stage for e in cc.events} & {"clear_old_results", "summarize"}
    # Far below the whole history: the last request is a fraction of every result's text.
    assert sizes[-1] < sum(len(result(k)) for k in range(TURNS)) // 4 // 4
    assert lost(cc) == []
    steps = agent.memory.steps
    assert any(
        isinstance(s, SummaryStep)
        or (isinstance(s, ActionStep) and s.observations and "needle" not in s.observations)
        for s in steps
    )
    # A step's calls and its observation stay together: no observation without its call.
    for step in steps:
        if isinstance(step, ActionStep) and step.observations:
            assert step.tool_calls


def test_without_the_callback_the_same_run_is_refused_once_the_memory_passes_the_window() -> None:
    gate = Gate(_replies(), MODES["equal"], _refusal)
    with StubAPI(*gate.script()) as stub, pytest.raises(AgentGenerationError):
        _agent(stub, []).run(TASK)
    assert gate.refused == 1


def test_the_system_prompt_and_the_tools_count_against_the_window() -> None:
    cc = Compactor(Policy.default(context_limit=24_000), MemoryStore())
    callback = compaction_callback(cc)
    with StubAPI(*Gate(_replies(2), MODES["equal"], _refusal).script()) as stub:
        agent = _agent(stub, [callback])
        agent.run(TASK)
    system = agent.memory.system_prompt.system_prompt
    assert len(system) > 1_000
    session = cc.engine.session
    assert session is not None and session.state.overhead >= cc.tokens.text(system)


def test_each_step_s_usage_calibrates_the_budget() -> None:
    cc = compactor()
    seen: list[Any] = []
    original = cc.observe
    cc.observe = lambda usage: (seen.append(usage), original(usage))[1]  # type: ignore[method-assign]
    gate = Gate(_replies(5), MODES["equal"], _refusal)
    with StubAPI(*gate.script()) as stub:
        _agent(stub, [compaction_callback(cc)]).run(TASK)
    assert seen == [size(b) for b in stub.bodies]


def test_two_agents_running_at_once_land_in_two_sessions() -> None:
    conversations = Conversations(Policy.default(context_limit=24_000), MemoryStore())
    callback = compaction_callback(conversations)
    turns = 8

    def answer(body: Any) -> Any:
        task = body["messages"][1]["content"][0]["text"]
        name = "alpha" if "alpha" in task else "beta"
        done = sum(1 for m in body["messages"] if "Observation" in str(m.get("content")))
        reply = _replies(turns, prefix=name)[min(done, turns)]
        return replace(reply, input_tokens=size(body))

    runs: dict[str, Any] = {}
    with StubAPI(*[answer] * (2 * (turns + 1))) as stub:

        def run(name: str) -> None:
            agent = _agent(stub, [callback], name=name)
            runs[name] = (agent.run(f"{TASK} ({name})"), callback.compactor_for(agent))

        threads = [threading.Thread(target=run, args=(n,)) for n in ("alpha", "beta")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    (a_answer, a_cc), (b_answer, b_cc) = runs["alpha"], runs["beta"]
    assert a_answer == b_answer == "all parts read"
    assert a_cc is not b_cc and a_cc.session_id != b_cc.session_id
    assert a_cc.recall("alpha").text and not a_cc.recall("beta").text
    assert b_cc.recall("beta").text and not b_cc.recall("alpha").text
