"""The drop-in clients learn the server's window from its first refusal, against a server that
refuses above 12,000 tokens in its API's real words, for a model the policy does not know:
with no ``context_limit`` (so the limit is the 192,000-token default) and with one 4,000
tokens above the window. Through ``compacting()``, both SDKs, sync and async, each way a
request goes out (``create``, ``create(stream=True)`` read to its end, the SDK's streaming
helper): at most one refused request per session, then the limit keeps to the window the
refusal stated (journaled, so a resumed session keeps it too).

The loops are the SDK docs' own (append the reply, run the tools, call again); the streamed
OpenAI request asks for no usage (a caller need not), so nothing but the refusal and the
estimate keep it in the window (uncalibrated, the estimate errs on the safe side here: that
session is never refused, and never learns the window)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import openai
import pytest

from context_compact import Compactor, MemoryStore, Policy
from context_compact.integrations import compacting
from context_compact.session.policy import SessionPolicy
from context_compact.testing.fakes import BenchSummarizer
from stub_api import (
    Reply,
    StubAPI,
    ToolCall,
    anthropic_prompt_too_long,
    openai_context_length_exceeded,
    openai_input_exceeds_context_window,
)

WINDOW = 12_000
TURNS = 60
MODEL = "house-model-7b"  # no table knows it
# The premise of these tests: a model no table knows, its window learned from the server.
pytestmark = pytest.mark.filterwarnings("ignore::context_compact.errors.UnknownModelWarning")

LIMITS = {"no limit": None, "limit 4,000 above the window": WINDOW + 4_000}
CALLS = ("create", "create(stream=True)", "stream helper")
TASK = "Read every part of the log."


def policy(limit: int | None, **fields: Any) -> SessionPolicy:
    given = {} if limit is None else {"context_limit": limit}
    return Policy.default(model=MODEL, summarize_ahead=False, **given, **fields)


def _result(step: int) -> str:
    return (f"log line {step}: worker ok latency {step % 97} ms\n" * 60)[:2_400]


class Server:
    """A server with a 12,000-token window (4 characters a token), refusing in its API's
    words above it; ``refused`` counts the refusals."""

    def __init__(self, kind: str) -> None:
        self.kind, self.step, self.refused = kind, 0, 0

    def __call__(self, body: dict[str, Any]) -> Any:
        tokens = len(json.dumps(body)) // 4
        if tokens > WINDOW:
            self.refused += 1
            if self.kind == "anthropic":
                return anthropic_prompt_too_long(tokens, WINDOW)
            if self.kind == "openai, no window said":
                return openai_input_exceeds_context_window()
            return openai_context_length_exceeded(WINDOW, tokens)
        self.step += 1
        if self.step > TURNS:
            return Reply(text="done", input_tokens=tokens)
        return Reply(tool_calls=(ToolCall("read_log", {"part": self.step}),), input_tokens=tokens)


# -- one turn, each way a request goes out -------------------------------------------------


def _get(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name)


def _anthropic_blocks(events: list[Any]) -> list[dict[str, Any]]:
    """The content blocks of a raw Anthropic event stream."""
    blocks: list[dict[str, Any]] = []
    partial: dict[int, str] = {}
    for event in events:
        if event.type == "content_block_start":
            blocks.append(event.content_block.model_dump(exclude_none=True))
        elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
            partial[event.index] = partial.get(event.index, "") + event.delta.partial_json
        elif event.type == "content_block_delta" and event.delta.type == "text_delta":
            blocks[event.index]["text"] += event.delta.text
    for index, text in partial.items():
        blocks[index]["input"] = json.loads(text)
    return blocks


def _chat_message(chunks: list[Any]) -> dict[str, Any]:
    """The assistant message of a raw Chat Completions chunk stream."""
    content = ""
    calls: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        content += delta.content or ""
        for call in delta.tool_calls or []:
            entry = calls.setdefault(
                call.index,
                {"id": call.id, "type": "function", "function": {"name": "", "arguments": ""}},
            )
            entry["function"]["name"] += call.function.name or ""
            entry["function"]["arguments"] += call.function.arguments or ""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = list(calls.values())
    return message


def _chat_kwargs(messages: list[Any], call: str) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"model": MODEL, "messages": messages}
    if call == "stream helper":
        kwargs["stream_options"] = {"include_usage": True}
    return kwargs


def turn(client: Any, kind: str, call: str, messages: list[Any]) -> Any:
    """One request the SDK's way; the assistant message to append."""
    if kind == "anthropic":
        kwargs: dict[str, Any] = {"model": MODEL, "max_tokens": 256, "messages": messages}
        if call == "create":
            return {"role": "assistant", "content": client.messages.create(**kwargs).content}
        if call == "create(stream=True)":
            events = list(client.messages.create(**kwargs, stream=True))
            return {"role": "assistant", "content": _anthropic_blocks(events)}
        with client.messages.stream(**kwargs) as stream:
            return {"role": "assistant", "content": stream.get_final_message().content}
    kwargs = _chat_kwargs(messages, call)
    if call == "create":
        return client.chat.completions.create(**kwargs).choices[0].message
    if call == "create(stream=True)":
        return _chat_message(list(client.chat.completions.create(**kwargs, stream=True)))
    with client.chat.completions.stream(**kwargs) as stream:
        return stream.get_final_completion().choices[0].message


async def aturn(client: Any, kind: str, call: str, messages: list[Any]) -> Any:
    """``turn`` with an async client."""
    if kind == "anthropic":
        kwargs: dict[str, Any] = {"model": MODEL, "max_tokens": 256, "messages": messages}
        if call == "create":
            reply = await client.messages.create(**kwargs)
            return {"role": "assistant", "content": reply.content}
        if call == "create(stream=True)":
            events = [e async for e in await client.messages.create(**kwargs, stream=True)]
            return {"role": "assistant", "content": _anthropic_blocks(events)}
        async with client.messages.stream(**kwargs) as stream:
            return {"role": "assistant", "content": (await stream.get_final_message()).content}
    kwargs = _chat_kwargs(messages, call)
    if call == "create":
        return (await client.chat.completions.create(**kwargs)).choices[0].message
    if call == "create(stream=True)":
        stream = await client.chat.completions.create(**kwargs, stream=True)
        return _chat_message([chunk async for chunk in stream])
    async with client.chat.completions.stream(**kwargs) as stream:
        return (await stream.get_final_completion()).choices[0].message


def tool_results(kind: str, reply: Any, messages: list[Any]) -> bool:
    """Append the reply and its tools' results to ``messages``; False when it called none."""
    if kind == "anthropic":
        messages.append(reply)
        uses = [b for b in reply["content"] if _get(b, "type") == "tool_use"]
        if uses:
            content = [
                {"type": "tool_result", "tool_use_id": _get(u, "id"), "content": _result(n)}
                for n, u in enumerate(uses, len(messages))
            ]
            messages.append({"role": "user", "content": content})
        return bool(uses)
    message = reply if isinstance(reply, dict) else reply.model_dump(exclude_none=True)
    messages.append(message)
    calls = message.get("tool_calls") or []
    for call in calls:
        messages.append(
            {"role": "tool", "tool_call_id": call["id"], "content": _result(len(messages))}
        )
    return bool(calls)


def run(client: Any, kind: str, call: str) -> None:
    messages: list[Any] = [{"role": "user", "content": TASK}]
    for _ in range(TURNS + 1):
        if not tool_results(kind, turn(client, kind, call, messages), messages):
            return


async def arun(client: Any, kind: str, call: str) -> None:
    messages: list[Any] = [{"role": "user", "content": TASK}]
    for _ in range(TURNS + 1):
        if not tool_results(kind, await aturn(client, kind, call, messages), messages):
            return


def session(kind: str, mode: str, call: str, limit: int | None) -> tuple[Server, Compactor]:
    """One session against the 12,000-token server: the server (its refusals) and the
    compactor."""
    server = Server(kind)
    kind = "openai" if kind.startswith("openai") else kind
    compactor = Compactor(policy(limit), MemoryStore(), BenchSummarizer())
    with StubAPI(*([server] * (3 * TURNS))) as stub:
        if kind == "anthropic":
            cls: Any = anthropic.AsyncAnthropic if mode == "async" else anthropic.Anthropic
            raw = cls(base_url=stub.url, api_key="test", max_retries=0)
        else:
            cls = openai.AsyncOpenAI if mode == "async" else openai.OpenAI
            raw = cls(base_url=stub.openai_url, api_key="test", max_retries=0)
        client = compacting(raw, compactor)
        if mode == "async":
            asyncio.run(arun(client, kind, call))
        else:
            run(client, kind, call)
    return server, compactor


def _cases() -> list[Any]:
    cases = []
    for kind in ("anthropic", "openai"):
        for mode in ("sync", "async"):
            for call in CALLS:
                for name in LIMITS:
                    marks = () if call == "create" else (pytest.mark.slow,)
                    cases.append(pytest.param(kind, mode, call, name, marks=marks))
    return cases


@pytest.mark.parametrize(("kind", "mode", "call", "limit"), _cases())
def test_a_server_smaller_than_the_limit_refuses_at_most_once_per_session(
    kind: str, mode: str, call: str, limit: str
) -> None:
    server, compactor = session(kind, mode, call, LIMITS[limit])
    assert server.step == TURNS + 1  # the whole loop ran
    assert server.refused <= 1
    if server.refused:
        # Refused once: the window it stated holds every later request, and a resume.
        assert compactor.window is not None and compactor.window[0] == WINDOW
        assert compactor.limit <= WINDOW
    resumed = Compactor(
        policy(LIMITS[limit]), compactor.store, BenchSummarizer(), session=compactor.session_id
    )
    assert resumed.limit == compactor.limit


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("limit", list(LIMITS))
def test_a_refusal_that_states_no_window_bounds_it_by_the_request_refused(
    mode: str, limit: str
) -> None:
    # The Responses API's wording ("exceeds the context window of this model"), which
    # OpenAI-compatible gateways pass on too: the window is below the request refused.
    server, compactor = session("openai, no window said", mode, "create", LIMITS[limit])
    assert server.step == TURNS + 1
    assert server.refused <= 1
    assert compactor.window is not None and compactor.window[0] < WINDOW + 1_000
    assert "refused" in compactor.window[1]


def test_inspect_shows_the_window_the_server_stated() -> None:
    from context_compact.history.inspect import timeline

    _, compactor = session("anthropic", "sync", "create", None)
    line = timeline(compactor.store, str(compactor.session_id))
    assert line.window == WINDOW
    assert line.limit is not None and line.limit <= WINDOW
    assert line.assumed is None  # the server's window, no longer an assumed one
