"""LlamaIndex's ``FunctionAgent`` loop as its docs write it (``await agent.run(user_msg=...)``
with a ``FunctionTool``), driven by a function-calling LLM over the real ``openai`` SDK
(``llamaindex_llm``), against the stub. 64 tool steps of 2-40 KB results in ONE run: with
``CompactingFunctionAgent`` every model call inside the run is compacted, every refusal
recovered, nothing lost, two concurrent runs in two sessions; the plain ``FunctionAgent`` is
refused once its in-run scratchpad passes the window. The same in a window of 8,000 tokens
(``window_loop``: 60 steps of 3-6 KB results): not one refusal with the compacting agent, a
refusal within a few steps without it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("llama_index.core", reason="the llamaindex extra is not installed")

import window_loop
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.tools import FunctionTool
from llamaindex_llm import StubChatLLM
from loop_helpers import MODES, TURNS, Gate, compactor, lost, replies, result, size

from context_compact import MemoryStore, Policy, check
from context_compact.formats import openai_chat
from context_compact.integrations.conversations import Conversations
from context_compact.integrations.llamaindex import CompactingFunctionAgent
from stub_api import StubAPI, openai_context_length_exceeded

# LlamaIndex's own code trips pydantic's deprecation warnings (not ours to fix).
pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]


def read_log(part: int) -> str:
    """Read one part of the service log."""
    return result(part)


def read_window_log(part: int) -> str:
    """Read one part of the service log."""
    return window_loop.part(part)


def _refusal(tokens: int, limit: int) -> Any:
    return openai_context_length_exceeded(limit, tokens)


def _llm(stub: StubAPI) -> StubChatLLM:
    return StubChatLLM(base_url=stub.openai_url)


def _run(agent: Any, task: str) -> Any:
    async def go() -> Any:
        return await agent.run(user_msg=task, max_iterations=TURNS + 5)

    return asyncio.run(go())


def _violations(bodies: list[Any]) -> list[str]:
    return [
        f"request {i}: {v}"
        for i, body in enumerate(bodies)
        for v in check(openai_chat.to_canonical(body["messages"])[1])
    ]


@pytest.mark.parametrize("mode", ["equal", "below"])
def test_one_run_of_64_tool_steps_is_compacted_at_every_model_call(mode: str) -> None:
    limit = MODES[mode]
    gate = Gate(replies(), limit, _refusal)
    cc = compactor()
    with StubAPI(*gate.script()) as stub:
        agent = CompactingFunctionAgent(
            tools=[FunctionTool.from_defaults(read_log)],
            llm=_llm(stub),
            system_prompt="You read logs.",
            compactor=cc,
        )
        response = _run(agent, "read the log")
    assert str(response) == "all parts read"
    bodies = stub.bodies
    assert len(bodies) == TURNS + 1 + gate.refused
    assert _violations(bodies) == []
    sizes = [size(b) for b in bodies]
    if mode == "below":
        assert gate.refused > 0
        assert all(sizes[i + 1] <= limit for i, n in enumerate(sizes[:-1]) if n > limit)
    else:
        assert gate.refused == 0
    assert bodies[-1]["messages"][0] == {"role": "system", "content": "You read logs."}
    assert sizes[-1] < sum(len(result(k)) for k in range(TURNS)) // 4 // 4
    assert lost(cc) == []


def test_the_plain_function_agent_is_refused_once_its_scratchpad_passes_the_window() -> None:
    gate = Gate(replies(), MODES["equal"], _refusal)
    with StubAPI(*gate.script()) as stub:
        agent = FunctionAgent(tools=[FunctionTool.from_defaults(read_log)], llm=_llm(stub))
        with pytest.raises(Exception, match="maximum context length"):
            _run(agent, "read the log")
    assert gate.refused == 1


def test_two_concurrent_runs_land_in_two_sessions() -> None:
    conversations = Conversations(Policy.default(context_limit=24_000), MemoryStore())
    turns = 6

    def answer(body: Any) -> Any:
        task = next(m["content"] for m in body["messages"] if m["role"] == "user")
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        return replies(turns, prefix=task)[done]

    async def both(stub: StubAPI) -> list[Any]:
        agent = CompactingFunctionAgent(
            tools=[FunctionTool.from_defaults(read_log)], llm=_llm(stub), compactor=conversations
        )
        return list(await asyncio.gather(agent.run(user_msg="alpha"), agent.run(user_msg="beta")))

    with StubAPI(*[answer] * (2 * (turns + 1))) as stub:
        answers = asyncio.run(both(stub))
    assert [str(a) for a in answers] == ["all parts read"] * 2
    assert len(conversations) == 2
    sessions = list(conversations._open.values())
    texts = [(cc.recall("alpha").text, cc.recall("beta").text) for cc in sessions]
    assert sorted((bool(a), bool(b)) for a, b in texts) == [(False, True), (True, False)]


def _window_agent(stub: StubAPI, cc: Any) -> Any:
    tools = [FunctionTool.from_defaults(read_window_log, name="read_log")]
    if cc is None:
        return FunctionAgent(tools=tools, llm=_llm(stub))
    return CompactingFunctionAgent(tools=tools, llm=_llm(stub), compactor=cc)


@pytest.mark.slow
def test_one_run_of_60_steps_fits_a_window_of_8000_tokens_without_a_refusal() -> None:
    turns, limit = window_loop.TURNS, window_loop.LIMIT
    gate = Gate(replies(turns), limit, _refusal)
    cc = window_loop.compactor()
    with StubAPI(*gate.script()) as stub:
        response = _run(_window_agent(stub, cc), "read the log")
    assert str(response) == "all parts read"
    bodies = stub.bodies
    assert gate.refused == 0
    assert len(bodies) == turns + 1
    assert _violations(bodies) == []
    sizes = [size(b) for b in bodies]
    assert max(sizes) <= limit
    assert max(sizes[-5:]) < window_loop.history_tokens() // 4
    assert {e.stage for e in cc.events} & {"clear_old_results", "summarize"}
    assert window_loop.lost(cc) == []


@pytest.mark.slow
def test_the_plain_function_agent_is_refused_by_a_window_of_8000_tokens() -> None:
    turns, limit = window_loop.TURNS, window_loop.LIMIT
    gate = Gate(replies(turns), limit, _refusal)
    with StubAPI(*gate.script()) as stub, pytest.raises(Exception, match="maximum context length"):
        _run(_window_agent(stub, None), "read the log")
    assert gate.refused == 1
    assert len(stub.bodies) < turns // 4
