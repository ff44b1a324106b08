"""The SDK docs' tool loops, unchanged but for the one wrapped line, against the stub API.

Each loop is written as its SDK's docs write it (Anthropic: append ``response.content``;
OpenAI chat: append ``completion.choices[0].message`` and tool messages; Responses:
``input_list += response.output`` and ``function_call_output`` items), with the caller's
own list growing every turn. The client is ``compacting(client, compactor)``. Checked on
every request the stub received: it converts to a valid canonical history (``check()``); the
caller's list is never modified by a call; refusals are compacted and retried once.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import anthropic
import openai
import pytest

from context_compact import Compactor, MemoryStore, Policy, check
from context_compact.formats import openai_chat, openai_responses
from context_compact.integrations import compacting
from context_compact.testing.fakes import BenchSummarizer
from stub_api import (
    ErrorReply,
    Reply,
    StubAPI,
    ToolCall,
    anthropic_prompt_too_long,
    anthropic_rate_limit,
    openai_context_length_exceeded,
    openai_input_exceeds_context_window,
)

TURNS = 110
REFUSED = (35, 80)  # turns whose first request the stub refuses as too long
LIMIT = 12_000
BIG = "compiler output: warning in module, see line 42 of the generated file\n" * 80
TASK = "build the project and fix every warning"
SYSTEM = "You are a build bot."
ANTHROPIC_TOOLS = [
    {"name": "bash", "description": "Run a command", "input_schema": {"type": "object"}}
]
CHAT_TOOLS = [
    {
        "type": "function",
        "function": {"name": "bash", "description": "Run a command", "parameters": {}},
    }
]
RESPONSES_TOOLS = [{"type": "function", "name": "bash", "description": "Run", "parameters": {}}]


def run_tool(i: int) -> str:
    return f"step {i}\n{BIG}"


def texts(value: Any) -> int:
    """Characters of text in a request, whatever its format: the stub's token count."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(map(texts, value))
    if isinstance(value, dict):
        return sum(texts(v) for k, v in value.items() if k in ("content", "text", "output"))
    return 0


def script(refusal: Callable[[], ErrorReply], thinking: str | None = "hm") -> list[Any]:
    def sized(reply: Reply) -> Any:
        def answer(body: Any) -> Reply:
            items = body.get("messages") or body.get("input")
            return replace(reply, input_tokens=texts(items) // 4 + 50)

        return answer

    items: list[Any] = []
    for i in range(TURNS):
        if i in REFUSED:
            items.append(refusal())
        call = ToolCall("bash", {"command": f"make step{i}"})
        items.append(sized(Reply(text=f"Running step {i}.", tool_calls=(call,), thinking=thinking)))
    items.append(sized(Reply(text="All warnings fixed.")))
    return items


def compactor() -> Compactor:
    return Compactor(Policy.default(context_limit=LIMIT), MemoryStore(), BenchSummarizer())


class Untouched:
    """Asserts that a call leaves the caller's list as it was."""

    def __init__(self, items: list[Any]) -> None:
        self.items, self.copy = items, copy.deepcopy(items)

    def check(self) -> None:
        assert len(self.items) == len(self.copy)
        assert all(a is b or a == b for a, b in zip(self.items, self.copy, strict=True))


# -- the loops, as the docs write them -----------------------------------------------------


def anthropic_loop(client: Any) -> list[Any]:
    messages: list[Any] = [{"role": "user", "content": TASK}]
    step = 0
    while True:
        guard = Untouched(messages)
        response = client.messages.create(
            model="claude-test",
            max_tokens=1024,
            system=SYSTEM,
            tools=ANTHROPIC_TOOLS,
            messages=messages,
        )
        guard.check()
        messages.append({"role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            return messages
        tool_results = []
        for block in response.content:
            if block.type == "tool_use":
                tool_results.append(
                    {"type": "tool_result", "tool_use_id": block.id, "content": run_tool(step)}
                )
        step += 1
        messages.append({"role": "user", "content": tool_results})


def chat_loop(client: Any) -> list[Any]:
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
    ]
    completion = client.chat.completions.create(
        model="gpt-test", messages=messages, tools=CHAT_TOOLS
    )
    step = 0
    while completion.choices[0].message.tool_calls:
        messages.append(completion.choices[0].message)
        for tool_call in completion.choices[0].message.tool_calls:
            messages.append(
                {"role": "tool", "tool_call_id": tool_call.id, "content": run_tool(step)}
            )
        step += 1
        guard = Untouched(messages)
        completion = client.chat.completions.create(
            model="gpt-test", messages=messages, tools=CHAT_TOOLS
        )
        guard.check()
    messages.append(completion.choices[0].message)
    return messages


def responses_loop(client: Any) -> list[Any]:
    input_list: list[Any] = [
        {"role": "developer", "content": SYSTEM},
        {"role": "user", "content": TASK},
    ]
    response = client.responses.create(model="gpt-test", tools=RESPONSES_TOOLS, input=input_list)
    step = 0
    while any(item.type == "function_call" for item in response.output):
        input_list += response.output
        for item in response.output:
            if item.type == "function_call":
                input_list.append(
                    {
                        "type": "function_call_output",
                        "call_id": item.call_id,
                        "output": run_tool(step),
                    }
                )
        step += 1
        guard = Untouched(input_list)
        response = client.responses.create(
            model="gpt-test", tools=RESPONSES_TOOLS, input=input_list
        )
        guard.check()
    input_list += response.output
    return input_list


# -- checks --------------------------------------------------------------------------------


def canonical(body: dict[str, Any]) -> list[Any]:
    if "input" in body:
        return openai_responses.to_canonical(body["input"])[1]
    if body["model"].startswith("gpt"):
        return openai_chat.to_canonical(body["messages"])[1]
    return body["messages"]


def assert_session(c: Compactor, stub: StubAPI, final: list[Any]) -> None:
    assert stub.pending == 0
    assert len(stub.requests) == TURNS + 1 + len(REFUSED)
    for request in stub.requests:
        assert check(canonical(request.body)) == []
        assert texts(request.body.get("messages") or request.body.get("input")) < 4 * LIMIT
    stages = [e.stage for e in c.events]
    assert "session_restart" not in stages
    assert stages.count("reactive_compact") == len(REFUSED)
    # Clearing (lossless) keeps this loop under its limit between the two refusals; the
    # refusals are compacted reactively.
    assert "clear_old_results" in stages


LOOPS = {
    "anthropic": (anthropic_loop, anthropic_prompt_too_long),
    "openai-chat": (chat_loop, openai_context_length_exceeded),
    "openai-responses": (responses_loop, openai_input_exceeds_context_window),
}


def client_for(kind: str, stub: StubAPI, is_async: bool = False) -> Any:
    if kind == "anthropic":
        cls: Any = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
        return cls(api_key="test", base_url=stub.url, max_retries=0)
    cls = openai.AsyncOpenAI if is_async else openai.OpenAI
    return cls(api_key="test", base_url=stub.openai_url, max_retries=0)


@pytest.mark.parametrize("kind", list(LOOPS))
def test_the_sdk_docs_loop_runs_unchanged_through_refusals_and_compactions(
    kind: str, stub_api: StubAPI
) -> None:
    loop, refusal = LOOPS[kind]
    stub_api.enqueue(*script(refusal))
    c = compactor()
    final = loop(compacting(client_for(kind, stub_api), c))  # the one changed line
    assert_session(c, stub_api, final)
    assert c.format == kind


def test_the_same_session_in_three_formats_gets_the_same_compaction_decisions() -> None:
    runs, windows = {}, {}
    for kind, (loop, refusal) in LOOPS.items():
        with StubAPI(*script(refusal, thinking=None)) as stub:
            c = compactor()
            events: list[tuple[int, str]] = []
            c.subscribe(
                lambda e, stub=stub, events=events: events.append((len(stub.requests), e.stage))
            )
            loop(compacting(client_for(kind, stub), c))
            sizes = [len(canonical(r.body)) for r in stub.requests]
            runs[kind] = (events, sizes)
            windows[kind] = c.window
    stages = {stage for _, stage in runs["anthropic"][0]}
    assert {"clear_old_results", "reactive_compact"} <= stages
    # The same decisions up to the refusal and its reactive compaction. After it the sessions
    # know what their refusals said: the Anthropic and Chat ones a window above the limit
    # (nothing changes), the Responses one no window, so the request it refused bounds it.
    refused_at = min(n for n, stage in runs["anthropic"][0] if stage == "reactive_compact")

    def until_refusal(kind: str) -> tuple[list[tuple[int, str]], list[int]]:
        events, sizes = runs[kind]
        return [e for e in events if e[0] < refused_at], sizes[: refused_at + 1]

    assert until_refusal("anthropic") == until_refusal("openai-chat")
    assert until_refusal("anthropic") == until_refusal("openai-responses")
    assert runs["anthropic"] == runs["openai-chat"]
    assert windows["anthropic"] is None and windows["openai-chat"] is None
    bound = windows["openai-responses"]
    assert bound is not None and bound[0] < LIMIT and "refused" in bound[1]


# -- async ---------------------------------------------------------------------------------


async def async_anthropic_loop(client: Any, turns: int) -> list[Any]:
    messages: list[Any] = [{"role": "user", "content": TASK}]
    for step in range(turns):
        response = await client.messages.create(
            model="claude-test", max_tokens=1024, tools=ANTHROPIC_TOOLS, messages=messages
        )
        messages.append({"role": "assistant", "content": response.content})
        uses = [b for b in response.content if b.type == "tool_use"]
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": u.id, "content": run_tool(step)}
                    for u in uses
                ],
            }
        )
    return messages


async def async_openai_loop(client: Any, turns: int) -> list[Any]:
    input_list: list[Any] = [{"role": "user", "content": TASK}]
    for step in range(turns):
        response = await client.responses.create(model="gpt-test", input=input_list)
        input_list += response.output
        for item in response.output:
            if item.type == "function_call":
                output = run_tool(step)
                input_list.append(
                    {"type": "function_call_output", "call_id": item.call_id, "output": output}
                )
    return input_list


@pytest.mark.parametrize("kind", ["anthropic", "openai-responses"])
def test_the_async_clients_compact_and_retry_too(kind: str, stub_api: StubAPI) -> None:
    _, refusal = LOOPS[kind]
    stub_api.enqueue(*script(refusal)[:45])
    c = compactor()
    client = compacting(client_for(kind, stub_api, is_async=True), c)
    loop = async_anthropic_loop if kind == "anthropic" else async_openai_loop
    asyncio.run(loop(client, 44))
    stages = [e.stage for e in c.events]
    assert stages.count("reactive_compact") == 1 and "clear_old_results" in stages
    assert all(check(canonical(r.body)) == [] for r in stub_api.requests)


# -- what is not compaction's business ------------------------------------------------------


def test_other_errors_propagate_as_the_sdk_raised_them_without_a_retry(stub_api: StubAPI) -> None:
    stub_api.enqueue(anthropic_rate_limit())
    client = compacting(client_for("anthropic", stub_api), compactor())
    with pytest.raises(anthropic.RateLimitError):
        client.messages.create(
            model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    assert len(stub_api.requests) == 1


def test_a_second_refusal_propagates(stub_api: StubAPI) -> None:
    stub_api.enqueue(openai_context_length_exceeded(), openai_context_length_exceeded())
    client = compacting(client_for("openai-chat", stub_api), compactor())
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "hi"}]
        )
    assert len(stub_api.requests) == 2


def test_every_other_attribute_is_the_wrapped_clients_own(stub_api: StubAPI) -> None:
    raw = client_for("openai-chat", stub_api)
    client = compacting(raw, compactor())
    assert client.base_url == raw.base_url
    assert client.models is raw.models
    assert client.chat.completions.with_raw_response is raw.chat.completions.with_raw_response
    assert isinstance(client.with_options(timeout=5).responses.create.__self__, object)


def test_responses_with_previous_response_id_go_out_untouched(stub_api: StubAPI) -> None:
    stub_api.enqueue(Reply(text="ok"))
    c = compactor()
    client = compacting(client_for("openai-responses", stub_api), c)
    items = [{"role": "user", "content": "more"}]
    client.responses.create(model="gpt-test", input=items, previous_response_id="resp_1")
    assert stub_api.last_body["input"] == items and c.events == [] and c.format == "auto"


def test_calibration_reads_the_usage_of_each_response(stub_api: StubAPI) -> None:
    stub_api.enqueue(Reply(text="ok", input_tokens=900, cache_read_tokens=100))
    c = compactor()
    client = compacting(client_for("anthropic", stub_api), c)
    client.messages.create(
        model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    assert c.engine.session.state.measure() >= 1000 - 10  # type: ignore[attr-defined]
