"""LiteLLM's tool loop as its function-calling docs write it (``litellm.acompletion`` /
``litellm.completion`` with ``tools``, ``messages.append(response_message)``, one ``tool``
message per call), 64 tool turns against the stub, with ``CompactionHook`` in
``litellm.callbacks``: every request compacted, every refusal recovered, nothing lost, two
concurrent conversations in two sessions; without the hook the same loop is refused."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

# LiteLLM fetches its model price map from the internet at import unless told otherwise.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
pytest.importorskip("litellm")

import litellm
from loop_helpers import MODES, TURNS, Gate, compactor, lost, replies, result, size

from context_compact import Compactor, MemoryStore, Policy, check
from context_compact.errors import ConfigError
from context_compact.formats import openai_chat
from context_compact.integrations.conversations import Conversations
from context_compact.integrations.litellm import CompactionHook, conversation_key
from context_compact.sizing.request import prompt_tokens_of
from stub_api import StubAPI, openai_context_length_exceeded
from stub_sse import anthropic_events

# LiteLLM's own types trip a pydantic warning when first built (not ours to fix).
pytestmark = [
    pytest.mark.usefixtures("tiktoken_dir_kept"),
    pytest.mark.filterwarnings("ignore:Item.* using the `ReadOnly` qualifier"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_log",
            "description": "Read one part of the service log.",
            "parameters": {
                "type": "object",
                "properties": {"part": {"type": "integer"}},
                "required": ["part"],
            },
        },
    }
]


def _refusal(tokens: int, limit: int) -> Any:
    return openai_context_length_exceeded(limit, tokens)


@pytest.fixture
def hooked() -> Iterator[list[Any]]:
    """``litellm.callbacks`` for one test, restored after it."""
    saved = list(litellm.callbacks)
    try:
        yield litellm.callbacks
    finally:
        litellm.callbacks[:] = saved


def _options(stub: StubAPI, **extra: Any) -> dict[str, Any]:
    return {
        "model": "openai/gpt-test",
        "api_base": stub.openai_url,
        "api_key": "sk-stub",
        "tools": TOOLS,
        "max_retries": 0,
        **extra,
    }


def _answer(message: Any, messages: list[Any]) -> bool:
    """The docs' step: append the reply, run each tool call; False when it is the answer."""
    messages.append(message)
    calls = message.tool_calls or []
    for call in calls:
        part = json.loads(call.function.arguments)["part"]
        messages.append(
            {"tool_call_id": call.id, "role": "tool", "name": "read_log", "content": result(part)}
        )
    return bool(calls)


async def _aloop(acompletion: Any, task: str, **options: Any) -> list[Any]:
    messages: list[Any] = [
        {"role": "system", "content": "You read logs."},
        {"role": "user", "content": task},
    ]
    while True:
        response = await acompletion(messages=messages, **options)
        if not _answer(response.choices[0].message, messages):
            return messages


def _loop(completion: Any, task: str, **options: Any) -> list[Any]:
    messages: list[Any] = [{"role": "user", "content": task}]
    while True:
        response = completion(messages=messages, **options)
        if not _answer(response.choices[0].message, messages):
            return messages


def _violations(bodies: list[Any]) -> list[str]:
    return [
        f"request {i}: {v}"
        for i, body in enumerate(bodies)
        for v in check(openai_chat.to_canonical(body["messages"])[1])
    ]


@pytest.mark.parametrize("mode", ["equal", "below"])
def test_acompletion_with_the_hook_in_callbacks_runs_64_tool_turns_compacted(
    hooked: list[Any], mode: str
) -> None:
    limit = MODES[mode]
    gate = Gate(replies(), limit, _refusal)
    cc = compactor()
    hook = CompactionHook(cc)
    hooked.append(hook)
    with StubAPI(*gate.script()) as stub:
        history = asyncio.run(
            _aloop(hook.wrap(litellm.acompletion), "read the log", **_options(stub))
        )
    bodies = stub.bodies
    assert history[-1].content == "all parts read"
    assert len(bodies) == TURNS + 1 + gate.refused
    assert _violations(bodies) == []
    assert [size(b) for b in bodies if size(b) > limit] == [] or mode == "below"
    if mode == "below":
        assert gate.refused > 0
    assert size(bodies[-1]) < size({"messages": [plain(m) for m in history]}) // 4
    assert lost(cc) == []
    # The caller's list is whole: every result as the tool returned it.
    assert [m["content"] for m in history if isinstance(m, dict) and m["role"] == "tool"] == [
        result(k) for k in range(TURNS)
    ]


def plain(message: Any) -> Any:
    return message if isinstance(message, dict) else message.model_dump(exclude_none=True)


def test_the_hook_alone_compacts_acompletion_and_the_next_request_recovers_a_refusal(
    hooked: list[Any],
) -> None:
    limit = MODES["below"]
    gate = Gate(replies(), limit, _refusal)
    cc = compactor()
    hooked.append(CompactionHook(cc))

    async def loop() -> list[Any]:
        messages: list[Any] = [{"role": "user", "content": "read the log"}]
        refused = False
        while True:
            try:
                response = await litellm.acompletion(messages=messages, **_options(stub))
            except litellm.ContextWindowExceededError:
                assert not refused, "the retry of a refused request was refused too"
                refused = True
                continue  # the client's own retry: the hook sends the recovered view
            refused = False
            if not _answer(response.choices[0].message, messages):
                return messages

    with StubAPI(*gate.script()) as stub:
        history = asyncio.run(loop())
    bodies = stub.bodies
    assert history[-1].content == "all parts read"
    assert gate.refused > 0
    assert len(bodies) == TURNS + 1 + gate.refused
    refused_then = [i for i, b in enumerate(bodies[:-1]) if size(b) > limit]
    assert all(size(bodies[i + 1]) <= limit for i in refused_then)
    assert _violations(bodies) == []
    assert lost(cc) == []


def test_the_sync_completion_is_compacted_through_wrap_and_its_usage_observed(
    hooked: list[Any],
) -> None:
    limit = MODES["below"]
    gate = Gate(replies(), limit, _refusal)
    cc = compactor()
    hook = CompactionHook(cc)
    observed: list[Any] = []
    original = cc.observe
    cc.observe = lambda usage: (observed.append(usage), original(usage))[1]  # type: ignore[method-assign]
    with StubAPI(*gate.script()) as stub:
        history = _loop(hook.wrap(litellm.completion), "read the log", **_options(stub))
    bodies = stub.bodies
    assert history[-1].content == "all parts read"
    assert gate.refused > 0
    assert _violations(bodies) == []
    assert lost(cc) == []
    # Each answered request's usage (its size as the stub counts it) calibrated the budget;
    # the opening request (no session id, no tool call yet) is passed on untouched.
    answered = [size(b) for b in bodies if size(b) <= limit]
    assert [u.prompt_tokens for u in observed] == answered[1:]


def test_without_the_hook_the_same_loop_is_refused_once_the_history_passes_the_window() -> None:
    gate = Gate(replies(), MODES["equal"], _refusal)
    with StubAPI(*gate.script()) as stub, pytest.raises(litellm.ContextWindowExceededError):
        _loop(litellm.completion, "read the log", **_options(stub))


def test_a_streamed_acompletion_is_compacted_and_its_usage_observed(hooked: list[Any]) -> None:
    gate = Gate(replies(12), MODES["equal"], _refusal)
    cc = Compactor(Policy.default(context_limit=6_000), MemoryStore())
    hook = CompactionHook(cc)
    hooked.append(hook)
    acompletion = hook.wrap(litellm.acompletion)
    observed: list[Any] = []
    original = cc.observe
    cc.observe = lambda usage: (observed.append(usage), original(usage))[1]  # type: ignore[method-assign]

    async def loop() -> list[Any]:
        messages: list[Any] = [{"role": "user", "content": "read the log"}]
        while True:
            stream = await acompletion(
                messages=messages,
                stream=True,
                stream_options={"include_usage": True},
                **_options(stub),
            )
            chunks = [chunk async for chunk in stream]
            message = litellm.stream_chunk_builder(chunks, messages=messages).choices[0].message
            if not _answer(message, messages):
                return messages

    with StubAPI(*gate.script()) as stub:
        history = asyncio.run(loop())
    bodies = stub.bodies
    assert all(b.get("stream") is True for b in bodies)
    assert _violations(bodies) == []
    assert size(bodies[-1]) < size({"messages": [plain(m) for m in history]}) // 2
    assert lost(cc, 12) == []
    # Each stream's usage (its last chunk's) calibrated the budget as the loop read it.
    assert [u.prompt_tokens for u in observed] == [size(b) for b in bodies[1:]]


def test_two_concurrent_conversations_land_in_two_sessions(hooked: list[Any]) -> None:
    conversations = Conversations(Policy.default(context_limit=24_000), MemoryStore())
    hooked.append(CompactionHook(conversations))

    def answer(body: Any) -> Any:
        # Each conversation calls read_log on its own parts, ids prefixed by its task.
        task = body["messages"][0]["content"]
        turns = sum(1 for m in body["messages"] if m["role"] == "tool")
        tool_ids = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
        done = len(tool_ids) and tool_ids[-1].endswith(f"{TURNS // 4 - 1:03d}")
        return replies(TURNS // 4, prefix=task)[TURNS // 4 if done else turns]

    async def both(stub: StubAPI) -> list[list[Any]]:
        options = _options(stub)
        return list(
            await asyncio.gather(
                _aloop(litellm.acompletion, "alpha", litellm_session_id="alpha", **options),
                _aloop(litellm.acompletion, "beta", litellm_session_id="beta", **options),
            )
        )

    with StubAPI(*[answer] * (2 * (TURNS // 4 + 1))) as stub:
        alpha, beta = asyncio.run(both(stub))
    assert alpha[-1].content == beta[-1].content == "all parts read"
    for name in ("alpha", "beta"):
        cc = conversations.get(name)
        assert cc.session_id == f"conv-{name}"
        other = "beta" if name == "alpha" else "alpha"
        assert result(0) in cc.recall("needle-000", limit=50_000).text
        assert cc.recall(name).text and not cc.recall(other).text
    assert len(conversations) == 2


def test_a_conversation_without_a_session_id_is_keyed_by_its_first_tool_call() -> None:
    opening = [{"role": "user", "content": "hi"}]
    assert conversation_key({"messages": opening}) is None
    call = {"id": "call_abc", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    later = [*opening, {"role": "assistant", "content": None, "tool_calls": [call]}]
    assert conversation_key({"messages": later}) == "tool-call-call_abc"
    assert conversation_key({"messages": later, "metadata": {"session_id": "s-1"}}) == "s-1"
    assert conversation_key({"messages": later, "litellm_session_id": "s-2"}) == "s-2"
    # A proxy's /v1/messages request: Anthropic ``tool_use`` blocks, metadata of its own.
    use = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
    blocks = [*opening, {"role": "assistant", "content": [{"type": "text", "text": "x"}, use]}]
    assert conversation_key({"messages": blocks}) == "tool-call-toolu_1"
    assert conversation_key({"messages": blocks, "litellm_metadata": {"session_id": "s-3"}}) == (
        "s-3"
    )


def _anthropic_stream(input_tokens: int, cached: int) -> bytes:
    """A Messages stream as the API sends it (and a proxy relays it): its raw events."""
    usage = {
        "input_tokens": input_tokens,
        "output_tokens": 7,
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": 0,
    }
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": "read \u2713 all parts"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }
    return b"".join(anthropic_events(message))


@given(cuts=st.lists(st.integers(min_value=0), max_size=12), cached=st.integers(0, 5_000))
def test_a_relayed_messages_stream_calibrates_once_with_its_usage_however_it_is_cut(
    cuts: list[int], cached: int
) -> None:
    cc = Compactor(Policy.default(context_limit=24_000), MemoryStore())
    hook = CompactionHook(cc)
    observed: list[Any] = []
    original = cc.observe
    cc.observe = lambda usage: (observed.append(usage), original(usage))[1]  # type: ignore[method-assign]
    use = {"type": "tool_use", "id": "toolu_1", "name": "read_log", "input": {"part": 0}}
    request = {
        "model": "anthropic/claude-test",
        "system": [{"type": "text", "text": "You read logs."}],
        "litellm_call_id": "call-1",
        "messages": [
            {"role": "user", "content": "read the log"},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]},
        ],
    }
    raw = _anthropic_stream(1_234, cached)
    at = sorted({cut % (len(raw) + 1) for cut in cuts})
    chunks = [raw[a:b] for a, b in zip([0, *at], [*at, len(raw)], strict=True)]

    async def relay() -> Any:
        for chunk in chunks:
            yield chunk

    async def read() -> list[bytes]:
        sent = await hook.async_pre_call_deployment_hook(request, "anthropic_messages")
        assert sent is not None and sent["messages"] == request["messages"]
        stream = hook.async_post_call_streaming_iterator_hook(None, relay(), request)
        return [chunk async for chunk in stream]

    assert asyncio.run(read()) == chunks  # passed on as they came
    assert [prompt_tokens_of(u) for u in observed] == [1_234 + cached]
    assert cc.format == "anthropic"


def test_thinking_blocks_on_assistant_messages_pass_through_unchanged(hooked: list[Any]) -> None:
    cc = Compactor(Policy.default(context_limit=24_000), MemoryStore())
    hook = CompactionHook(cc)
    thinking = [{"type": "thinking", "thinking": "let me see", "signature": "sig-1"}]
    call = {"id": "call_1", "type": "function", "function": {"name": "read_log", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "read"},
        {"role": "assistant", "content": None, "tool_calls": [call], "thinking_blocks": thinking},
        {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
    ]
    with StubAPI(replies(0)[0]) as stub:
        hook.wrap(litellm.completion)(messages=messages, **_options(stub))
    sent = stub.last_body["messages"]
    assert sent[1]["thinking_blocks"] == thinking
    assert messages[1]["thinking_blocks"] is thinking  # the caller's list untouched


def test_a_store_and_a_policy_are_enough_to_build_the_hook() -> None:
    store = MemoryStore()
    hook = CompactionHook(store, policy=Policy.default(context_limit=9_000))
    cc = hook.compactor_for("user-42")
    assert cc.session_id == "conv-user-42" and cc.limit == 9_000 and cc.format == "openai-chat"
    with pytest.raises(TypeError, match="takes no settings"):
        CompactionHook(cc, policy=Policy.default())


def test_one_conversation_sent_on_both_routes_is_refused_naming_it() -> None:
    hook = CompactionHook(MemoryStore(), policy=Policy.default(context_limit=9_000))
    assert hook.compactor_for("user-42", "anthropic").format == "anthropic"
    assert hook.compactor_for("user-7").format == "openai-chat"
    with pytest.raises(ConfigError, match="'user-42' holds 'anthropic' messages"):
        hook.compactor_for("user-42")
