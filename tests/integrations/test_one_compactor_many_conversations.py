"""One compactor given to an adapter that serves several conversations: each conversation is
its own session (the first is the compactor's, every other one a sibling of the same
settings), driven through each framework's own agent loop against the stub API. Recall in
one conversation never returns another's words."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from context_compact import Compactor, MemoryStore, Policy
from context_compact.integrations.conversations import compactor_for
from stub_api import Reply, StubAPI

WORDS = {"a": "apricot-7731", "b": "blueberry-4412"}


@pytest.fixture(autouse=True)
def _no_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
        monkeypatch.setenv(name, "false")


def _compactor(seen: list[Any] | None = None) -> Compactor:
    compactor = Compactor(
        Policy.default(context_limit=12_000, keep_recent_tool_uses=2),
        MemoryStore(),
        token_counter=lambda text: len(text) // 4,
    )
    if seen is not None:
        compactor.subscribe(seen.append)
    return compactor


def _never_mixed(one: Compactor, two: Compactor) -> None:
    assert one is not two and one.session_id != two.session_id
    assert one.recall(WORDS["a"]).hits >= 1 and one.recall(WORDS["b"]).hits == 0
    assert two.recall(WORDS["b"]).hits >= 1 and two.recall(WORDS["a"]).hits == 0


def test_two_langchain_threads_through_one_compactor_are_two_sessions_that_never_mix() -> None:
    pytest.importorskip("langchain.agents.middleware")
    pytest.importorskip("langchain_anthropic")
    from langchain.agents import create_agent
    from langchain_anthropic import ChatAnthropic
    from langgraph.checkpoint.memory import InMemorySaver

    from context_compact.integrations.langchain import CompactionMiddleware

    compactor = _compactor()
    middleware = CompactionMiddleware(compactor)
    with StubAPI(*[Reply(text=f"noted {n}") for n in range(4)]) as stub:
        model = ChatAnthropic(base_url=stub.url, model="claude-test", api_key="sk-stub")
        agent = create_agent(model, [], middleware=[middleware], checkpointer=InMemorySaver())
        for thread in ["a", "b", "a", "b"]:
            agent.invoke(
                {"messages": [{"role": "user", "content": f"remember {WORDS[thread]}"}]},
                {"configurable": {"thread_id": thread}},
            )
    a, b = middleware.compactor_for("a"), middleware.compactor_for("b")
    assert a is compactor  # the first thread is the given compactor's session
    _never_mixed(a, b)
    assert b.session_id == f"{compactor.session_id}-b"
    assert {m["id"] for m in compactor.store.list_sessions()} == {a.session_id, b.session_id}
    assert all(("apricot" in str(body)) != ("blueberry" in str(body)) for body in stub.bodies)


def test_a_second_thread_gets_the_first_compactors_settings_and_subscribers() -> None:
    seen: list[Any] = []
    compactor = _compactor(seen)
    other = compactor_for(compactor, "b") if compactor_for(compactor, "a") else None
    assert other is not None and other is not compactor
    assert other.policy is compactor.policy and other.store is compactor.store
    assert other.summarizer is compactor.summarizer
    assert other.tokens.text("x" * 400) == compactor.tokens.text("x" * 400) == 100
    assert compactor_for(compactor, "b") is other and compactor_for(compactor, "a") is compactor
    other.compact_history(
        [
            {"role": "user", "content": "first " * 50},
            {"role": "assistant", "content": "answer " * 2000},
            {"role": "user", "content": "second"},
        ],
        "second",
        keep_recent_turns=0,
    )
    # Its events reach the shared subscribers, not the first compactor's own log.
    assert seen and seen == list(other.events) and len(compactor.events) == 0


def test_two_agents_sdk_sessions_on_one_compactor_are_two_sessions_that_never_mix() -> None:
    agents = pytest.importorskip("agents")
    from agents import Agent, OpenAIChatCompletionsModel, Runner
    from openai import AsyncOpenAI

    from context_compact.integrations.openai_agents import CompactingSession

    compactor = _compactor()
    one = CompactingSession(agents.SQLiteSession("user-a"), compactor)
    two = CompactingSession(agents.SQLiteSession("user-b"), compactor)
    with StubAPI(*[Reply(text=f"noted {n}") for n in range(4)]) as stub:

        async def talk() -> None:
            client = AsyncOpenAI(base_url=stub.openai_url, api_key="sk-stub", max_retries=0)
            agent = Agent(name="a", model=OpenAIChatCompletionsModel("gpt-test", client))
            for session, key in [(one, "a"), (two, "b"), (one, "a"), (two, "b")]:
                await Runner.run(
                    agent,
                    f"remember {WORDS[key]}",
                    session=session,
                    run_config=session.run_config(tracing_disabled=True),
                )
            await client.close()

        asyncio.run(talk())
    assert one.compactor is compactor
    _never_mixed(one.compactor, two.compactor)
    assert all(("apricot" in str(body)) != ("blueberry" in str(body)) for body in stub.bodies)


def _pydantic_agent(stub: StubAPI, **kwargs: Any) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    model = AnthropicModel(
        "claude-test", provider=AnthropicProvider(base_url=stub.url, api_key="sk-stub")
    )
    return Agent(model, model_settings={"max_tokens": 1024}, **kwargs)


def test_two_pydantic_ai_conversations_through_one_capability_never_mix() -> None:
    pytest.importorskip("pydantic_ai.capabilities")
    from context_compact.integrations.pydantic_ai import CompactionCapability

    compactor = _compactor()
    capability = CompactionCapability(compactor)
    with StubAPI(*[Reply(text=f"noted {n}") for n in range(4)]) as stub:
        agent = _pydantic_agent(stub, capabilities=[capability])

        async def talk() -> dict[str, Any]:
            first_a = await agent.run(f"remember {WORDS['a']}")
            first_b = await agent.run(f"remember {WORDS['b']}")
            again_a = await agent.run("and again", message_history=first_a.all_messages())
            await agent.run("and again", message_history=first_b.all_messages())
            return {"a": again_a.conversation_id, "b": first_b.conversation_id}

        ids = asyncio.run(talk())
    assert capability.compactor_for(ids["a"]) is compactor
    _never_mixed(compactor, capability.compactor_for(ids["b"]))
    assert compactor.recall("and again").hits == 1
    assert all(("apricot" in str(body)) != ("blueberry" in str(body)) for body in stub.bodies)


def test_two_pydantic_ai_conversations_through_one_history_processor_never_mix() -> None:
    capabilities = pytest.importorskip("pydantic_ai.capabilities")
    from context_compact.integrations.pydantic_ai import history_processor

    compactor = _compactor()
    processor = capabilities.ProcessHistory(history_processor(compactor))
    with StubAPI(*[Reply(text=f"noted {n}") for n in range(2)]) as stub:
        agent = _pydantic_agent(stub, capabilities=[processor])

        async def talk() -> Any:
            await agent.run(f"remember {WORDS['a']}")
            return (await agent.run(f"remember {WORDS['b']}")).conversation_id

        other = asyncio.run(talk())
    _never_mixed(compactor, compactor_for(compactor, other))
