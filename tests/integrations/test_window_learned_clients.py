"""The drop-in clients learn the server's window from its first refusal: a model the policy
does not know, no ``context_limit`` (so the limit is the 192,000-token default), against a
server that refuses above 12,000 tokens in its API's real words. Through ``compacting()``,
both SDKs, sync and async: one refused request per session, then the limit keeps to the
window the refusal stated (journaled, so a resumed session keeps it too)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import openai
import pytest

from context_compact import Compactor, MemoryStore, Policy
from context_compact.integrations import compacting
from context_compact.testing.fakes import BenchSummarizer
from stub_api import (
    Reply,
    StubAPI,
    ToolCall,
    anthropic_prompt_too_long,
    openai_context_length_exceeded,
)

WINDOW = 12_000
TURNS = 60
# The premise of these tests: a model no table knows, its window learned from the server.
pytestmark = pytest.mark.filterwarnings("ignore::context_compact.errors.UnknownModelWarning")


def _result(step: int) -> str:
    return (f"log line {step}: worker ok latency {step % 97} ms\n" * 60)[:2_400]


class Server:
    """A server with a 12,000-token window (4 characters a token)."""

    def __init__(self, kind: str) -> None:
        self.kind, self.step, self.refused = kind, 0, 0

    def __call__(self, body: dict[str, Any]) -> Any:
        tokens = len(json.dumps(body)) // 4
        if tokens > WINDOW:
            self.refused += 1
            if self.kind == "anthropic":
                return anthropic_prompt_too_long(tokens, WINDOW)
            return openai_context_length_exceeded(WINDOW, tokens)
        self.step += 1
        if self.step > TURNS:
            return Reply(text="done", input_tokens=tokens)
        return Reply(tool_calls=(ToolCall("read_log", {"part": self.step}),), input_tokens=tokens)


def _loop(client: Any, kind: str) -> None:
    messages: list[Any] = [{"role": "user", "content": "Read every part of the log."}]
    for _ in range(TURNS + 1):
        if kind == "anthropic":
            r = client.messages.create(model="house-model-7b", max_tokens=256, messages=messages)
            messages.append({"role": "assistant", "content": r.content})
            uses = [b for b in r.content if b.type == "tool_use"]
            if not uses:
                return
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": u.id,
                            "content": _result(len(messages)),
                        }
                        for u in uses
                    ],
                }
            )
        else:
            r = client.chat.completions.create(model="house-model-7b", messages=messages)
            message = r.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return
            for call in message.tool_calls:
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": _result(len(messages))}
                )


async def _aloop(client: Any, kind: str) -> None:
    await asyncio.to_thread(_loop, _Synced(client), kind)


class _Synced:
    """An async client driven from a worker thread (each call run to completion)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.messages = _Calls(client.messages) if hasattr(client, "messages") else None
        self.chat = _Chat(client) if hasattr(client, "chat") else None


class _Calls:
    def __init__(self, resource: Any) -> None:
        self.resource = resource

    def create(self, **kwargs: Any) -> Any:
        return asyncio.run(self.resource.create(**kwargs))


class _Chat:
    def __init__(self, client: Any) -> None:
        self.completions = _Calls(client.chat.completions)


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_server_smaller_than_the_default_refuses_once_per_session(kind: str, mode: str) -> None:
    server = Server(kind)
    store = MemoryStore()
    compactor = Compactor(
        Policy.default(model="house-model-7b", summarize_ahead=False), store, BenchSummarizer()
    )
    with StubAPI(*([server] * (3 * TURNS))) as stub:
        if kind == "anthropic":
            cls = anthropic.AsyncAnthropic if mode == "async" else anthropic.Anthropic
            raw = cls(base_url=stub.url, api_key="test", max_retries=0)
        else:
            cls = openai.AsyncOpenAI if mode == "async" else openai.OpenAI
            raw = cls(base_url=stub.openai_url, api_key="test", max_retries=0)
        client = compacting(raw, compactor)
        if mode == "async":
            asyncio.run(_aloop(client, kind))
        else:
            _loop(client, kind)
    assert server.step == TURNS + 1
    assert server.refused == 1
    assert compactor.window is not None and compactor.window[0] == WINDOW
    assert compactor.limit <= WINDOW
    resumed = Compactor(
        Policy.default(model="house-model-7b"),
        store,
        BenchSummarizer(),
        session=compactor.session_id,
    )
    assert resumed.limit <= WINDOW


def test_inspect_shows_the_window_the_server_stated() -> None:
    from context_compact.history.inspect import timeline

    server = Server("anthropic")
    store = MemoryStore()
    compactor = Compactor(
        Policy.default(model="house-model-7b", summarize_ahead=False), store, BenchSummarizer()
    )
    with StubAPI(*([server] * (3 * TURNS))) as stub:
        raw = anthropic.Anthropic(base_url=stub.url, api_key="test", max_retries=0)
        _loop(compacting(raw, compactor), "anthropic")
    line = timeline(store, str(compactor.session_id))
    assert line.window == WINDOW
    assert line.limit is not None and line.limit <= WINDOW
