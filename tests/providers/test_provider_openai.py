"""``OpenAIChatProvider`` through the real ``openai`` SDK client and the stub server."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

import stub_api as s
from context_compact.errors import ContextOverflow
from context_compact.providers.base import Provider, Usage
from context_compact.providers.errors import is_context_overflow
from context_compact.providers.openai_chat import (
    LOCAL_PLACEHOLDER_KEY,
    OpenAIChatProvider,
    is_local_url,
    reply_from_completion,
    tools_from_openai,
    tools_to_openai,
)
from stub_api import Reply, StubAPI, ToolCall

SYSTEM = "You are a careful coding agent."
TOOLS: list[dict[str, Any]] = [
    {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
    {"name": "now", "input_schema": {"type": "object", "properties": {}}},
]
HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Fix the failing test."},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Reading both."},
            {"type": "tool_use", "id": "call_1", "name": "read_file", "input": {"path": "a.py"}},
            {"type": "tool_use", "id": "call_2", "name": "read_file", "input": {"path": "b.py"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "x = 1"},
            {
                "type": "tool_result",
                "tool_use_id": "call_2",
                "content": [{"type": "text", "text": "y = 2"}],
            },
            {"type": "text", "text": "Both files read."},
        ],
    },
]


@pytest.fixture(autouse=True)
def _dummy_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def make_provider(stub_api: StubAPI) -> Iterator[Any]:
    made: list[OpenAIChatProvider] = []

    def make(**options: Any) -> OpenAIChatProvider:
        provider = OpenAIChatProvider(
            "gpt-test", base_url=stub_api.openai_url, timeout=5, **options
        )
        made.append(provider)
        return provider

    yield make
    for provider in made:
        provider.close()


def ask(provider: Provider, messages: list[dict[str, Any]] = HISTORY) -> Any:
    return provider.complete(system=SYSTEM, messages=messages, tools=TOOLS, max_tokens=128)


def test_a_text_reply_becomes_canonical_with_cached_tokens_split_out(
    stub_api: StubAPI, make_provider: Any
) -> None:
    stub_api.enqueue(Reply(text="Done.", input_tokens=20, cache_read_tokens=80, output_tokens=4))
    reply = ask(make_provider())
    assert reply.message == {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}
    assert reply.stop_reason == "end_turn"
    assert reply.usage == Usage(input_tokens=20, output_tokens=4, cache_read_tokens=80)
    assert reply.usage.prompt_tokens == 100


def test_tool_calls_become_tool_use_blocks_with_parsed_arguments(
    stub_api: StubAPI, make_provider: Any
) -> None:
    stub_api.enqueue(
        Reply(
            tool_calls=(
                ToolCall("read_file", {"path": "c.py"}, id="call_7"),
                ToolCall("now", id="call_8", raw_arguments=""),
            )
        )
    )
    reply = ask(make_provider())
    assert reply.stop_reason == "tool_use"
    assert reply.message["content"] == [
        {"type": "tool_use", "id": "call_7", "name": "read_file", "input": {"path": "c.py"}},
        {"type": "tool_use", "id": "call_8", "name": "now", "input": {}},
    ]


def test_arguments_that_are_not_a_json_object_are_kept_raw(
    stub_api: StubAPI, make_provider: Any
) -> None:
    broken = '{"path": "a.py"'
    stub_api.enqueue(
        Reply(
            tool_calls=(
                ToolCall("read_file", id="call_1", raw_arguments=broken),
                ToolCall("read_file", id="call_2", raw_arguments="[1, 2]"),
            )
        )
    )
    reply = ask(make_provider())
    assert [b["input"] for b in reply.tool_uses] == [
        {"_raw_arguments": broken},
        {"_raw_arguments": "[1, 2]"},
    ]


def test_finish_reasons_map_to_canonical_stop_reasons(
    stub_api: StubAPI, make_provider: Any
) -> None:
    stub_api.enqueue(
        Reply(text="trunc", stop_reason="max_tokens"),
        Reply(text="blocked", stop_reason="content_filter"),
        # A server that says "stop" while returning tool calls still ends the turn on tools.
        Reply(tool_calls=(ToolCall("now", id="c"),), stop_reason="end_turn"),
    )
    provider = make_provider()
    assert [ask(provider).stop_reason for _ in range(3)] == ["max_tokens", "refusal", "tool_use"]


def test_the_request_body_has_system_tool_calls_tool_messages_and_functions(
    stub_api: StubAPI, make_provider: Any
) -> None:
    stub_api.enqueue(Reply(text="ok"))
    ask(make_provider())
    (request,) = stub_api.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    body = request.body
    assert body["model"] == "gpt-test"
    assert body["max_tokens"] == 128
    assert body["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Fix the failing test."},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Reading both."}],
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "b.py"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "x = 1"},
        {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "y = 2"}]},
        {"role": "user", "content": [{"type": "text", "text": "Both files read."}]},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file.",
                "parameters": TOOLS[0]["input_schema"],
            },
        },
        {"type": "function", "function": {"name": "now", "parameters": TOOLS[1]["input_schema"]}},
    ]


def test_a_tool_only_assistant_turn_is_sent_with_null_content(
    stub_api: StubAPI, make_provider: Any
) -> None:
    history = [
        {"role": "user", "content": "Time?"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c", "name": "now", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c", "content": "noon"}],
        },
    ]
    stub_api.enqueue(Reply(text="Noon."))
    ask(make_provider(), history)
    sent = stub_api.last_body["messages"]
    assert sent[2]["content"] is None
    assert sent[2]["tool_calls"][0]["function"] == {"name": "now", "arguments": "{}"}
    assert sent[3:] == [{"role": "tool", "tool_call_id": "c", "content": "noon"}]


def test_the_output_budget_field_can_be_max_completion_tokens(
    stub_api: StubAPI, make_provider: Any
) -> None:
    stub_api.enqueue(Reply(text="ok"))
    ask(make_provider(max_tokens_param="max_completion_tokens"))
    body = stub_api.last_body
    assert body["max_completion_tokens"] == 128
    assert "max_tokens" not in body


def test_no_tools_means_no_tools_field(stub_api: StubAPI, make_provider: Any) -> None:
    stub_api.enqueue(Reply(text="ok"))
    make_provider().complete(system="", messages=HISTORY[:1], tools=[], max_tokens=8)
    body = stub_api.last_body
    assert "tools" not in body
    assert body["messages"] == [{"role": "user", "content": "Fix the failing test."}]


def test_the_callers_messages_and_tools_are_never_mutated(
    stub_api: StubAPI, make_provider: Any
) -> None:
    history, tools = copy.deepcopy(HISTORY), copy.deepcopy(TOOLS)
    stub_api.enqueue(Reply(text="ok"))
    make_provider().complete(system=SYSTEM, messages=history, tools=tools, max_tokens=8)
    assert (history, tools) == (HISTORY, TOOLS)


def test_a_local_base_url_from_the_environment_needs_no_key(
    stub_api: StubAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("OPENAI_BASE_URL", stub_api.openai_url)
    stub_api.enqueue(Reply(text="local"))
    provider = OpenAIChatProvider("local-model", timeout=5)
    try:
        assert ask(provider).text == "local"
    finally:
        provider.close()
    assert stub_api.requests[0].headers["authorization"] == f"Bearer {LOCAL_PLACEHOLDER_KEY}"


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://localhost:8080/v1", True),
        ("http://127.0.0.1:8000/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://192.168.1.20:8080/v1", True),
        ("http://0.0.0.0:8080/v1", True),
        ("https://api.openai.com/v1", False),
        ("https://8.8.8.8/v1", False),
    ],
)
def test_local_servers_are_recognised_by_host(url: str, local: bool) -> None:
    assert is_local_url(url) is local


def test_an_overflow_refusal_surfaces_at_once_and_is_recognised(
    stub_api: StubAPI, make_provider: Any
) -> None:
    stub_api.enqueue(s.llamacpp_exceed_context(), Reply(text="a retry would get this"))
    with pytest.raises(ContextOverflow) as info:
        ask(make_provider())
    assert is_context_overflow(info.value)
    assert isinstance(info.value.__cause__, openai.BadRequestError)
    assert (info.value.prompt_tokens, info.value.window) == (14_429, 8192)
    assert stub_api.pending == 1


def test_tool_schemas_convert_both_ways() -> None:
    assert tools_from_openai(tools_to_openai(TOOLS)) == TOOLS


def test_replies_translate_from_plain_json_without_a_client() -> None:
    reply = reply_from_completion(
        {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": "Looking.",
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "f", "arguments": json.dumps({"a": [1]})},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {
                "prompt_tokens": 50,
                "completion_tokens": 7,
                "prompt_tokens_details": {"cached_tokens": 30, "cache_write_tokens": 15},
            },
        }
    )
    assert reply.message["content"] == [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "c1", "name": "f", "input": {"a": [1]}},
    ]
    assert reply.usage == Usage(
        input_tokens=5, output_tokens=7, cache_read_tokens=30, cache_creation_tokens=15
    )
    assert reply_from_completion({"choices": [], "usage": None}).message == {
        "role": "assistant",
        "content": [],
    }
