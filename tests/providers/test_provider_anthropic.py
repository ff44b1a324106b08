"""``AnthropicProvider`` through the real ``anthropic`` SDK client and the stub server."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from hypothesis import given
from hypothesis import strategies as st

import api_rules
import stub_api as s
from context_compact.errors import ContextOverflow
from context_compact.providers.anthropic import (
    AnthropicProvider,
    build_request,
    reply_from_response,
    with_cache_breakpoints,
)
from context_compact.providers.base import Provider, Usage
from context_compact.providers.errors import is_context_overflow
from stub_api import Reply, StubAPI, ToolCall

EPHEMERAL = {"type": "ephemeral"}
SYSTEM = "You are a careful coding agent."
TOOLS: list[dict[str, Any]] = [
    {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
    {
        "name": "run",
        "description": "Run a shell command.",
        "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    },
]
HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Fix the failing test."},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Reading it."},
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "t.py"}},
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "assert 1 == 2"}],
    },
    {"role": "assistant", "content": [{"type": "text", "text": "Found it."}]},
    {"role": "user", "content": "Go on."},
]


@pytest.fixture(autouse=True)
def _dummy_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


@pytest.fixture
def make_provider(stub_api: StubAPI) -> Iterator[Any]:
    made: list[AnthropicProvider] = []

    def make(**options: Any) -> AnthropicProvider:
        provider = AnthropicProvider("claude-test", base_url=stub_api.url, timeout=5, **options)
        made.append(provider)
        return provider

    yield make
    for provider in made:
        provider.close()


def markers(value: Any) -> int:
    """How many ``cache_control`` keys a JSON value holds, at any depth."""
    return json.dumps(value).count('"cache_control"')


def test_a_text_reply_becomes_a_canonical_assistant_message_with_usage(
    stub_api: StubAPI, make_provider: Any
) -> None:
    stub_api.enqueue(
        Reply(
            text="Done.",
            input_tokens=12,
            output_tokens=3,
            cache_read_tokens=900,
            cache_creation_tokens=40,
        )
    )
    provider: Provider = make_provider()
    reply = provider.complete(system=SYSTEM, messages=HISTORY, tools=TOOLS, max_tokens=256)
    assert reply.message == {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}
    assert reply.stop_reason == "end_turn"
    assert reply.usage == Usage(
        input_tokens=12, output_tokens=3, cache_read_tokens=900, cache_creation_tokens=40
    )
    assert reply.usage.prompt_tokens == 952


def test_a_tool_use_reply_keeps_plain_dict_blocks_and_the_stop_reason(
    stub_api: StubAPI, make_provider: Any
) -> None:
    stub_api.enqueue(
        Reply(text="Running it.", tool_calls=(ToolCall("run", {"cmd": "pytest -x"}, id="toolu_9"),))
    )
    reply = make_provider().complete(system=SYSTEM, messages=HISTORY, tools=TOOLS, max_tokens=256)
    assert reply.stop_reason == "tool_use"
    assert reply.message["content"] == [
        {"type": "text", "text": "Running it."},
        {"type": "tool_use", "id": "toolu_9", "name": "run", "input": {"cmd": "pytest -x"}},
    ]
    assert reply.tool_uses == [reply.message["content"][1]]
    assert all(type(block) is dict for block in reply.message["content"])


def test_thinking_blocks_are_kept_with_their_signature(
    stub_api: StubAPI, make_provider: Any
) -> None:
    stub_api.enqueue(Reply(thinking="The assert is wrong.", text="Fixed."))
    reply = make_provider().complete(system=SYSTEM, messages=HISTORY, tools=[], max_tokens=64)
    assert reply.message["content"][0] == {
        "type": "thinking",
        "thinking": "The assert is wrong.",
        "signature": api_rules.sign("The assert is wrong."),
    }
    assert reply.text == "Fixed."


def test_the_request_body_carries_model_system_tools_and_messages_unchanged(
    stub_api: StubAPI, make_provider: Any
) -> None:
    stub_api.enqueue(Reply(text="ok"))
    make_provider().complete(system=SYSTEM, messages=HISTORY, tools=TOOLS, max_tokens=321)
    (request,) = stub_api.requests
    assert request.path == "/v1/messages"
    # SDK versions differ on the header that carries the key.
    auth = request.headers.get("x-api-key", "") + request.headers.get("authorization", "")
    assert "sk-ant-test" in auth
    assert request.body == {
        "model": "claude-test",
        "max_tokens": 321,
        "system": SYSTEM,
        "messages": HISTORY,
        "tools": TOOLS,
    }
    assert markers(request.body) == 0


def test_an_empty_system_prompt_and_no_tools_are_left_out_of_the_request(
    stub_api: StubAPI, make_provider: Any
) -> None:
    stub_api.enqueue(Reply(text="ok"), Reply(text="ok"))
    make_provider().complete(system="", messages=HISTORY[:1], tools=[], max_tokens=8)
    make_provider(cache=True).complete(system="", messages=HISTORY[:1], tools=[], max_tokens=8)
    for body in stub_api.bodies:
        assert "system" not in body
        assert "tools" not in body


def test_cache_breakpoints_sit_on_the_last_tool_the_system_and_the_two_newest_user_turns(
    stub_api: StubAPI, make_provider: Any
) -> None:
    stub_api.enqueue(Reply(text="ok"))
    make_provider(cache=True).complete(system=SYSTEM, messages=HISTORY, tools=TOOLS, max_tokens=64)
    body = stub_api.last_body
    assert body["system"] == [{"type": "text", "text": SYSTEM, "cache_control": EPHEMERAL}]
    assert body["tools"][-1] == {**TOOLS[-1], "cache_control": EPHEMERAL}
    assert body["tools"][0] == TOOLS[0]
    second_to_last_user, last_user = body["messages"][2], body["messages"][-1]
    assert second_to_last_user["content"][-1]["cache_control"] == EPHEMERAL
    assert last_user["content"] == [{"type": "text", "text": "Go on.", "cache_control": EPHEMERAL}]
    assert markers(body["messages"]) == 2
    assert markers(body) == 4
    for sent, original in zip(body["messages"][:2], HISTORY, strict=False):
        assert sent == original


def test_a_string_user_turn_becomes_a_marked_text_block_when_it_takes_the_breakpoint() -> None:
    history = [
        {"role": "user", "content": "First."},
        {"role": "assistant", "content": "Sure."},
        {"role": "user", "content": "Second."},
    ]
    _, messages, _ = with_cache_breakpoints(SYSTEM, history, [])
    assert messages[0] == {
        "role": "user",
        "content": [{"type": "text", "text": "First.", "cache_control": EPHEMERAL}],
    }
    assert messages[1] is history[1]
    assert messages[2] == {
        "role": "user",
        "content": [{"type": "text", "text": "Second.", "cache_control": EPHEMERAL}],
    }
    assert history[2] == {"role": "user", "content": "Second."}


def test_a_single_user_turn_gets_one_message_breakpoint() -> None:
    request = build_request(
        model="m", system=SYSTEM, messages=HISTORY[:1], tools=[], max_tokens=8, cache=True
    )
    assert markers(request["messages"]) == 1
    assert markers(request) == 2


def test_the_callers_messages_and_tools_are_never_mutated(
    stub_api: StubAPI, make_provider: Any
) -> None:
    history, tools = copy.deepcopy(HISTORY), copy.deepcopy(TOOLS)
    stub_api.enqueue(Reply(text="ok"))
    make_provider(cache=True).complete(system=SYSTEM, messages=history, tools=tools, max_tokens=64)
    assert history == HISTORY
    assert tools == TOOLS


TEXTS = st.text(max_size=12)
BLOCK_CONTENT = st.lists(st.builds(lambda t: {"type": "text", "text": t}, TEXTS), max_size=3)


@given(
    contents=st.lists(st.one_of(TEXTS, BLOCK_CONTENT), max_size=8),
    tool_count=st.integers(0, 3),
    system=TEXTS,
)
def test_breakpoints_never_exceed_the_api_maximum_of_four_and_never_touch_the_input(
    contents: list[Any], tool_count: int, system: str
) -> None:
    history = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": c}
        for i, c in enumerate(contents)
    ]
    tools = [{"name": f"t{i}", "input_schema": {"type": "object"}} for i in range(tool_count)]
    before = copy.deepcopy((history, tools))
    request = build_request(
        model="m", system=system, messages=history, tools=tools, max_tokens=8, cache=True
    )
    assert (history, tools) == before
    assert markers(request) <= 4
    assert markers(request.get("tools", [])) == (1 if tools else 0)
    assert markers(request.get("system", [])) == (1 if system else 0)


def test_the_base_url_comes_from_the_environment_when_not_given(
    stub_api: StubAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", stub_api.url)
    stub_api.enqueue(Reply(text="from env"))
    provider = AnthropicProvider("claude-test", timeout=5)
    try:
        assert (
            provider.complete(system="", messages=HISTORY, tools=[], max_tokens=8).text
            == "from env"
        )
    finally:
        provider.close()


def test_a_refusal_surfaces_at_once_without_retries(stub_api: StubAPI, make_provider: Any) -> None:
    provider = make_provider()
    stub_api.enqueue(s.anthropic_prompt_too_long(), Reply(text="a retry would get this"))
    with pytest.raises(ContextOverflow) as too_long:
        provider.complete(system=SYSTEM, messages=HISTORY, tools=TOOLS, max_tokens=64)
    assert is_context_overflow(too_long.value)
    assert isinstance(too_long.value.__cause__, anthropic.BadRequestError)
    assert (too_long.value.prompt_tokens, too_long.value.window) == (210_000, 200_000)
    assert stub_api.pending == 1
    stub_api.enqueue(s.anthropic_overloaded(), Reply(text="a retry would get this"))
    provider.complete(system=SYSTEM, messages=HISTORY, tools=TOOLS, max_tokens=64)
    with pytest.raises(anthropic.APIStatusError) as overloaded:
        provider.complete(system=SYSTEM, messages=HISTORY, tools=TOOLS, max_tokens=64)
    assert overloaded.value.status_code == 529
    assert not is_context_overflow(overloaded.value)
    assert stub_api.pending == 1
    assert len(stub_api.requests) == 3


def test_replies_translate_from_plain_json_without_a_client() -> None:
    reply = reply_from_response(
        {
            "content": [
                {"type": "text", "text": "hi", "citations": None},
                {"type": "tool_use", "id": "t1", "name": "f", "input": {}, "caller": None},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 5, "output_tokens": 2, "cache_read_input_tokens": None},
        }
    )
    assert reply.message["content"] == [
        {"type": "text", "text": "hi"},
        {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
    ]
    assert reply.usage == Usage(input_tokens=5, output_tokens=2)
