"""One session per conversation: LangChain's thread_id, the Agents SDK's session id, a key."""

from __future__ import annotations

import asyncio

import pytest

from context_compact import MemoryStore, Policy
from context_compact.integrations import Conversations
from stub_api import Reply, StubAPI


@pytest.fixture(autouse=True)
def _no_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
        monkeypatch.setenv(name, "false")


def conversations() -> Conversations:
    return Conversations(Policy.default(context_limit=12_000), MemoryStore())


def test_a_key_names_the_same_session_every_time_and_a_strange_key_a_hashed_one() -> None:
    chats = conversations()
    assert chats.session_id("thread-42") == "conv-thread-42"
    assert chats.get("thread-42") is chats.get("thread-42")
    strange = chats.session_id("user/42 ünïcode")
    assert strange.startswith("conv-") and len(strange) == 37
    assert chats.session_id("user/42 ünïcode") == strange


def test_a_conversation_dropped_from_memory_is_resumed_from_the_store() -> None:
    chats = Conversations(Policy.default(context_limit=12_000), MemoryStore(), max_open=1)
    first = chats.get("a")
    first.prepare([{"role": "user", "content": "alpha words"}], "alpha words")
    chats.get("b")  # pushes "a" out
    again = chats.get("a")
    assert again is not first
    assert again.view() == first.view()


def test_two_langchain_threads_on_one_agent_are_two_sessions_that_never_mix() -> None:
    pytest.importorskip("langchain.agents.middleware")
    pytest.importorskip("langchain_anthropic")
    from langchain.agents import create_agent
    from langchain_anthropic import ChatAnthropic
    from langgraph.checkpoint.memory import InMemorySaver

    from context_compact.integrations.langchain import CompactionMiddleware

    chats = conversations()
    replies = [Reply(text=f"noted {n}") for n in range(4)]
    with StubAPI(*replies) as stub:
        model = ChatAnthropic(base_url=stub.url, model="claude-test", api_key="sk-stub")
        agent = create_agent(
            model, [], middleware=[CompactionMiddleware(chats)], checkpointer=InMemorySaver()
        )
        for thread, words in [("a", "apricot-7731"), ("b", "blueberry-4412")] * 2:
            agent.invoke(
                {"messages": [{"role": "user", "content": f"remember {words}"}]},
                {"configurable": {"thread_id": thread}},
            )
    sessions = {meta["id"] for meta in chats.store.list_sessions()}
    assert sessions == {"conv-a", "conv-b"}
    a, b = chats.get("a"), chats.get("b")
    assert a.recall("apricot-7731").hits == 2 and a.recall("blueberry-4412").hits == 0
    assert b.recall("blueberry-4412").hits == 2 and b.recall("apricot-7731").hits == 0
    # Each request carried its own thread's history only.
    assert all(("apricot" in str(body)) != ("blueberry" in str(body)) for body in stub.bodies)


def test_an_agents_sdk_session_is_the_compactor_session_of_its_id() -> None:
    agents = pytest.importorskip("agents")
    from context_compact.integrations.openai_agents import CompactingSession

    chats = conversations()
    one = CompactingSession(agents.SQLiteSession("user-1"), chats)
    two = CompactingSession(agents.SQLiteSession("user-2"), chats)

    async def talk() -> None:
        await one.add_items([{"role": "user", "content": "apricot-7731"}])
        await two.add_items([{"role": "user", "content": "blueberry-4412"}])
        await one.get_items()
        await two.get_items()

    asyncio.run(talk())
    assert one.compactor is chats.get("user-1") and two.compactor is chats.get("user-2")
    assert one.compactor.recall("blueberry-4412").hits == 0
    assert two.compactor.recall("blueberry-4412").hits == 1


STRANGE_KEYS = ["user/42 ünïcode", " ", "a" * 200, "x\ny", "ключ", "conv-a b", "\udcff"]


@pytest.mark.parametrize("key", STRANGE_KEYS)
def test_no_key_opens_the_session_of_another_keys_hashed_form(key: str) -> None:
    chats = conversations()
    hashed = chats.session_id(key)
    digits = hashed.removeprefix("conv-")
    assert len(digits) == 32
    for forged in (digits, digits.upper()):
        assert chats.session_id(forged) != hashed
    owner, forger = chats.get(key), chats.get(digits)
    owner.prepare([{"role": "user", "content": "secret-owner-words"}], "secret-owner-words")
    assert forger.session_id != owner.session_id
    assert forger.recall("secret-owner-words").hits == 0
    assert owner.recall("secret-owner-words").hits == 1


def test_keys_that_differ_as_text_name_different_sessions() -> None:
    chats = conversations()
    keys = [*STRANGE_KEYS, "thread-42", "0" * 32, "A" * 32, "a" * 31, "a" * 33, 7, "7x"]
    ids = [chats.session_id(k) for k in keys]
    assert len(set(ids)) == len(keys)
    assert chats.session_id("a" * 31) == "conv-" + "a" * 31  # not a hash's form: kept plain
