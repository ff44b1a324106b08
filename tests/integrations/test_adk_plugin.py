"""Google ADK's agent loop as its docs write it (an ``LlmAgent`` with a function tool and a
non-Gemini model through ``LiteLlm``, an ``App``, a ``Runner`` over an
``InMemorySessionService``) with ``App(plugins=[CompactionPlugin(...)])``: 60 tool steps in
one invocation at an 8,000-token window against the stub, every model call compacted, every
refusal recovered, nothing lost, two sessions at once in two compactor sessions; without the
plugin the same invocation is refused once its history passes the window."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("google.adk", reason="the adk extra is not installed")

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models.lite_llm import LiteLlm
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
from loop_helpers import Gate, replies, size
from window_loop import LIMIT, MODES, TURNS, compactor, history_tokens, lost, part

from context_compact import Compactor, MemoryStore, Policy, check
from context_compact.formats import openai_chat
from context_compact.integrations.adk import CompactionPlugin
from context_compact.integrations.conversations import Conversations
from stub_api import Reply, StubAPI, ToolCall, openai_context_length_exceeded

# LiteLLM's types trip a pydantic warning when first imported (not ours to fix).
pytestmark = pytest.mark.filterwarnings("ignore:Item.* using the `ReadOnly` qualifier")

USER = "user-1"
INSTRUCTION = "You read service logs, one part at a time, and say when you are done."


def read_log(part_number: int) -> str:
    """Read one part of the service log."""
    return part(part_number)


def _replies(turns: int = TURNS, prefix: str = "call") -> list[Any]:
    out = replies(turns, prefix=prefix)
    # The tool's parameter is ``part_number``: the stub's calls name it so.
    return [
        type(r)(
            text=r.text,
            tool_calls=tuple(
                type(c)(c.name, {"part_number": c.input["part"]}, id=c.id) for c in r.tool_calls
            ),
        )
        for r in out
    ]


def _refusal(tokens: int, limit: int) -> Any:
    return openai_context_length_exceeded(limit, tokens)


def _agent(stub: StubAPI, name: str = "reader", sub_agents: Any = ()) -> LlmAgent:
    model = LiteLlm(model="openai/gpt-4o", api_base=stub.openai_url, api_key="sk-stub")
    return LlmAgent(
        name=name,
        model=model,
        instruction=INSTRUCTION,
        tools=[read_log],
        sub_agents=list(sub_agents),
    )


def _runner(agent: LlmAgent, plugins: list[Any]) -> tuple[Runner, InMemorySessionService]:
    sessions = InMemorySessionService()
    app = App(name="logs", root_agent=agent, plugins=plugins)
    return Runner(app=app, session_service=sessions), sessions


async def _invoke(runner: Runner, sessions: InMemorySessionService, task: str) -> str | None:
    session = await sessions.create_session(app_name="logs", user_id=USER)
    message = types.Content(role="user", parts=[types.Part(text=task)])
    final = None
    async for event in runner.run_async(user_id=USER, session_id=session.id, new_message=message):
        if event.is_final_response() and event.content and event.content.parts:
            final = event.content.parts[0].text
    return final


def _violations(bodies: list[Any]) -> list[str]:
    return [
        f"request {i}: {v}"
        for i, body in enumerate(bodies)
        for v in check(openai_chat.to_canonical(body["messages"])[1])
    ]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["equal", "below"])
def test_one_invocation_of_60_tool_steps_is_compacted_at_every_model_call(mode: str) -> None:
    limit = MODES[mode]
    gate = Gate(_replies(), limit, _refusal)
    cc = compactor()
    with StubAPI(*gate.script()) as stub:
        runner, sessions = _runner(_agent(stub), [CompactionPlugin(cc)])
        answer = asyncio.run(_invoke(runner, sessions, "read the service log"))
    assert answer == "all parts read"
    bodies = stub.bodies
    assert len(bodies) == TURNS + 1 + gate.refused
    assert _violations(bodies) == []
    sizes = [size(b) for b in bodies]
    if mode == "equal":
        assert gate.refused == 0
    else:
        assert gate.refused > 0
        assert all(sizes[i + 1] <= limit for i, n in enumerate(sizes[:-1]) if n > limit)
    assert bodies[-1]["messages"][0]["content"].startswith(INSTRUCTION)
    assert max(sizes[-5:]) < history_tokens() // 4
    assert {e.stage for e in cc.events} & {"clear_old_results", "summarize"}
    assert lost(cc) == []


@pytest.mark.slow
def test_without_the_plugin_the_same_invocation_is_refused_once_its_history_passes_the_window() -> (
    None
):
    gate = Gate(_replies(), MODES["equal"], _refusal)
    with StubAPI(*gate.script()) as stub:
        runner, sessions = _runner(_agent(stub), [])
        with pytest.raises(Exception, match="maximum context length"):
            asyncio.run(_invoke(runner, sessions, "read the service log"))
    assert gate.refused == 1
    assert len(stub.bodies) < TURNS // 4


@pytest.mark.slow
def test_the_sync_runner_with_the_plugin_given_to_the_runner_is_compacted_too() -> None:
    gate = Gate(_replies(), MODES["equal"], _refusal)
    cc = compactor()
    with StubAPI(*gate.script()) as stub:
        sessions = InMemorySessionService()
        with pytest.warns(DeprecationWarning, match="plugins"):
            runner = Runner(
                agent=_agent(stub),
                app_name="logs",
                plugins=[CompactionPlugin(cc)],
                session_service=sessions,
            )
        session = asyncio.run(sessions.create_session(app_name="logs", user_id=USER))
        message = types.Content(role="user", parts=[types.Part(text="read the service log")])
        events = list(runner.run(user_id=USER, session_id=session.id, new_message=message))
    assert events[-1].content.parts[0].text == "all parts read"
    assert gate.refused == 0
    assert max(size(b) for b in stub.bodies) <= LIMIT
    assert lost(cc) == []


def test_two_sessions_running_at_once_land_in_two_compactor_sessions() -> None:
    conversations = Conversations(Policy.default(context_limit=LIMIT), MemoryStore())
    plugin = CompactionPlugin(conversations)
    turns = 6

    def answer(body: Any) -> Any:
        task = next(m["content"] for m in body["messages"] if m["role"] == "user")
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        return _replies(turns, prefix=task)[done]

    async def both(stub: StubAPI) -> list[str | None]:
        runner, sessions = _runner(_agent(stub), [plugin])
        return list(
            await asyncio.gather(
                _invoke(runner, sessions, "alpha"), _invoke(runner, sessions, "beta")
            )
        )

    with StubAPI(*[answer] * (2 * (turns + 1))) as stub:
        answers = asyncio.run(both(stub))
    assert answers == ["all parts read"] * 2
    assert len(conversations) == 2
    sessions = list(conversations._open.values())
    texts = [(cc.recall("alpha").text, cc.recall("beta").text) for cc in sessions]
    assert sorted((bool(a), bool(b)) for a, b in texts) == [(False, True), (True, False)]


def test_one_compactor_given_serves_each_session_in_a_session_of_its_own() -> None:
    cc = compactor()
    plugin = CompactionPlugin(cc)

    def answer(body: Any) -> Any:
        task = next(m["content"] for m in body["messages"] if m["role"] == "user")
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        return _replies(2, prefix=task)[done]

    async def one_then_other(stub: StubAPI) -> list[str]:
        runner, sessions = _runner(_agent(stub), [plugin])
        await _invoke(runner, sessions, "alpha")
        await _invoke(runner, sessions, "beta")
        listed = await sessions.list_sessions(app_name="logs", user_id=USER)
        return [s.id for s in listed.sessions]

    with StubAPI(*[answer] * 6) as stub:
        ids = asyncio.run(one_then_other(stub))
    first, second = (plugin.compactor_for(i) for i in ids)
    assert {first, second} - {cc} and cc in (first, second)
    other = second if first is cc else first
    assert cc.recall("alpha").text and not cc.recall("beta").text
    assert other.recall("beta").text and not other.recall("alpha").text


def test_the_instruction_and_the_tools_count_against_the_window() -> None:
    cc = Compactor(Policy.default(context_limit=LIMIT), MemoryStore())
    with StubAPI(*Gate(_replies(2), LIMIT, _refusal).script()) as stub:
        runner, sessions = _runner(_agent(stub), [CompactionPlugin(cc)])
        asyncio.run(_invoke(runner, sessions, "read the service log"))
    session = cc.engine.session
    assert session is not None
    assert session.state.overhead >= cc.tokens.text(INSTRUCTION) + cc.tokens.text("read_log")


def test_each_response_s_usage_calibrates_the_budget() -> None:
    cc = compactor()
    seen: list[Any] = []
    original = cc.observe
    cc.observe = lambda usage: (seen.append(usage), original(usage))[1]  # type: ignore[method-assign]
    gate = Gate(_replies(5), LIMIT, _refusal)
    with StubAPI(*gate.script()) as stub:
        runner, sessions = _runner(_agent(stub), [CompactionPlugin(cc)])
        asyncio.run(_invoke(runner, sessions, "read the service log"))
    assert seen == [size(b) for b in stub.bodies]


def test_an_agent_the_root_transfers_to_is_a_conversation_of_its_own() -> None:
    conversations = Conversations(Policy.default(context_limit=LIMIT), MemoryStore())
    transfer = ToolCall("transfer_to_agent", {"agent_name": "helper"}, id="to_helper")
    script = [Reply(text="asking the helper", tool_calls=(transfer,)), *_replies(1, "helper")]
    with StubAPI(*script) as stub:
        root = _agent(stub, "root", sub_agents=[_agent(stub, "helper")])
        runner, sessions = _runner(root, [CompactionPlugin(conversations)])

        async def go() -> tuple[str | None, str]:
            answer = await _invoke(runner, sessions, "read the service log")
            listed = await sessions.list_sessions(app_name="logs", user_id=USER)
            return answer, listed.sessions[0].id

        answer, session = asyncio.run(go())
    assert answer == "all parts read"
    assert len(stub.bodies) == 3
    assert len(conversations) == 2
    root_cc = conversations.get(session)
    helper_cc = conversations.get(f"{session}/helper")
    assert len(conversations) == 2
    assert helper_cc.recall("needle-000").text and not root_cc.recall("needle-000").text
