"""The SDK docs' streaming loops, unchanged but for the one wrapped line, against the stub API.

Anthropic: ``with client.messages.stream(...) as stream``, the text read from
``stream.text_stream`` and ``stream.get_final_message()`` appended to the history. OpenAI
chat: ``create(stream=True)`` and the deltas (content, ``tool_calls`` by index) accumulated
into the assistant message. Responses: ``create(stream=True)`` and the items of
``response.output_item.done`` appended to the input list. The stub answers every request
as server-sent events and reports, in the stream's last events, a usage computed from what
it received; each time a request arrives the test notes the compactor's calibration anchor,
which must hold the usage streamed in the answer before: the caller's reading of the stream
is what calibrated it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import anthropic
import openai
import pytest
from test_drop_in_clients import (
    ANTHROPIC_TOOLS,
    CHAT_TOOLS,
    RESPONSES_TOOLS,
    SYSTEM,
    TASK,
    Untouched,
    canonical,
    client_for,
    compactor,
    run_tool,
    texts,
)

from context_compact import Compactor, check
from context_compact.integrations import compacting
from stub_api import (
    ErrorReply,
    MidStreamError,
    Reply,
    StubAPI,
    ToolCall,
    anthropic_prompt_too_long,
    openai_context_length_exceeded,
    openai_input_exceeds_context_window,
)

TURNS = 110
REFUSED = 60  # the turn whose first request the stub refuses as too long


class Session:
    """The stub's script for one run, and what it saw: the usage it streamed for each
    answered request, and the compactor's anchor when each request arrived."""

    def __init__(
        self,
        c: Compactor,
        refusal: Callable[[], ErrorReply],
        turns: int = TURNS,
        refused: int = REFUSED,
    ) -> None:
        self.c = c
        self.reported: list[int | None] = []  # None: the request was refused
        self.anchors: list[tuple[int, int] | None] = []
        self.rewrites: list[int] = []  # compactions that rewrote the view, so far
        self.items: list[Any] = []
        for i in range(turns):
            if i == refused:
                self.items.append(self.refuse(refusal))
            call = ToolCall("bash", {"command": f"make step{i}"})
            self.items.append(self.answer(Reply(text=f"Running step {i}.", tool_calls=(call,))))
        self.items.append(self.answer(Reply(text="All warnings fixed.")))

    def note(self) -> None:
        self.anchors.append(self.c.engine.session.state.anchor)  # type: ignore[attr-defined]
        self.rewrites.append(sum(e.stage != "persist_new_results" for e in self.c.events))

    def refuse(self, refusal: Callable[[], ErrorReply]) -> Any:
        def answer(body: Any) -> ErrorReply:
            self.note()
            self.reported.append(None)
            return refusal()

        return answer

    def answer(self, reply: Reply) -> Any:
        def answer(body: Any) -> Reply:
            self.note()
            tokens = texts(body.get("messages") or body.get("input")) // 4 + 50
            self.reported.append(tokens)
            return replace(reply, input_tokens=tokens)

        return answer

    def assert_calibrated_by_every_stream(self) -> None:
        """Each request found the anchor set to the usage streamed in the answer before,
        unless a compaction rewrote the view in between (the old count no longer applies)."""
        matched = 0
        pairs = zip(self.reported, self.anchors[1:], self.rewrites, self.rewrites[1:], strict=False)
        for before, anchor, done, now in pairs:
            if before is None:
                continue
            if anchor is None and now > done:
                continue
            assert anchor is not None and anchor[1] == before
            matched += 1
        assert matched >= 0.9 * len(self.reported)
        final = self.c.engine.session.state.anchor  # type: ignore[attr-defined]
        assert final is not None and final[1] == self.reported[-1]


# -- the loops, as the docs write them -----------------------------------------------------


def anthropic_stream_loop(client: Any) -> list[Any]:
    messages: list[Any] = [{"role": "user", "content": TASK}]
    step = 0
    while True:
        guard = Untouched(messages)
        printed = []
        with client.messages.stream(
            model="claude-test",
            max_tokens=1024,
            system=SYSTEM,
            tools=ANTHROPIC_TOOLS,
            messages=messages,
        ) as stream:
            for text in stream.text_stream:
                printed.append(text)
            message = stream.get_final_message()
        guard.check()
        assert "".join(printed) == message.content[0].text
        messages.append({"role": "assistant", "content": message.content})
        if message.stop_reason != "tool_use":
            return messages
        tool_results = [
            {"type": "tool_result", "tool_use_id": block.id, "content": run_tool(step)}
            for block in message.content
            if block.type == "tool_use"
        ]
        step += 1
        messages.append({"role": "user", "content": tool_results})


def chat_stream_loop(client: Any) -> list[Any]:
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
    ]
    step = 0
    while True:
        guard = Untouched(messages)
        stream = client.chat.completions.create(
            model="gpt-test",
            messages=messages,
            tools=CHAT_TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
        content = ""
        tool_calls: dict[int, dict[str, Any]] = {}
        for chunk in stream:
            if not chunk.choices:
                continue  # the usage chunk
            delta = chunk.choices[0].delta
            content += delta.content or ""
            for call in delta.tool_calls or []:
                entry = tool_calls.setdefault(
                    call.index,
                    {"id": call.id, "type": "function", "function": {"name": "", "arguments": ""}},
                )
                entry["function"]["name"] += call.function.name or ""
                entry["function"]["arguments"] += call.function.arguments or ""
        guard.check()
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = list(tool_calls.values())
        messages.append(message)
        if not tool_calls:
            return messages
        for call_dict in tool_calls.values():
            messages.append(
                {"role": "tool", "tool_call_id": call_dict["id"], "content": run_tool(step)}
            )
        step += 1


def responses_stream_loop(client: Any) -> list[Any]:
    input_list: list[Any] = [
        {"role": "developer", "content": SYSTEM},
        {"role": "user", "content": TASK},
    ]
    step = 0
    while True:
        guard = Untouched(input_list)
        stream = client.responses.create(
            model="gpt-test", tools=RESPONSES_TOOLS, input=input_list, stream=True
        )
        text, output = "", []
        for event in stream:
            if event.type == "response.output_text.delta":
                text += event.delta
            elif event.type == "response.output_item.done":
                output.append(event.item)
        guard.check()
        assert text.startswith(("Running step", "All warnings"))
        input_list += output
        calls = [item for item in output if item.type == "function_call"]
        if not calls:
            return input_list
        for item in calls:
            input_list.append(
                {"type": "function_call_output", "call_id": item.call_id, "output": run_tool(step)}
            )
        step += 1


LOOPS = {
    "anthropic": (anthropic_stream_loop, anthropic_prompt_too_long),
    "openai-chat": (chat_stream_loop, openai_context_length_exceeded),
    "openai-responses": (responses_stream_loop, openai_input_exceeds_context_window),
}


@pytest.mark.parametrize("kind", list(LOOPS))
def test_the_sdk_docs_streaming_loop_compacts_retries_and_calibrates_from_the_stream(
    kind: str, stub_api: StubAPI
) -> None:
    loop, refusal = LOOPS[kind]
    c = compactor()
    session = Session(c, refusal)
    stub_api.enqueue(*session.items)
    loop(compacting(client_for(kind, stub_api), c))  # the one changed line
    assert stub_api.pending == 0 and len(stub_api.requests) == TURNS + 2
    for request in stub_api.requests:
        assert request.body["stream"] is True
        assert check(canonical(request.body)) == []
    stages = [e.stage for e in c.events]
    assert stages.count("reactive_compact") == 1
    assert "clear_old_results" in stages  # clearing alone keeps these loops in budget
    assert "session_restart" not in stages
    session.assert_calibrated_by_every_stream()


# -- async ---------------------------------------------------------------------------------


async def async_anthropic_stream_loop(client: Any, turns: int) -> list[Any]:
    messages: list[Any] = [{"role": "user", "content": TASK}]
    for step in range(turns):
        async with client.messages.stream(
            model="claude-test", max_tokens=1024, tools=ANTHROPIC_TOOLS, messages=messages
        ) as stream:
            async for _event in stream:
                pass
            message = await stream.get_final_message()
        messages.append({"role": "assistant", "content": message.content})
        uses = [b for b in message.content if b.type == "tool_use"]
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


async def async_chat_stream_loop(client: Any, turns: int) -> list[Any]:
    messages: list[Any] = [{"role": "user", "content": TASK}]
    for step in range(turns):
        async with client.chat.completions.stream(
            model="gpt-test", messages=messages, stream_options={"include_usage": True}
        ) as stream:
            async for _event in stream:
                pass
            completion = await stream.get_final_completion()
        message = completion.choices[0].message
        messages.append(message)
        for call in message.tool_calls or []:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": run_tool(step)})
    return messages


ASYNC_TURNS = 44


@pytest.mark.parametrize("kind", ["anthropic", "openai-chat"])
def test_the_async_streaming_helpers_compact_retry_and_calibrate_too(
    kind: str, stub_api: StubAPI
) -> None:
    _, refusal = LOOPS[kind]
    c = compactor()
    session = Session(c, refusal, turns=ASYNC_TURNS - 1, refused=35)
    stub_api.enqueue(*session.items)
    client = compacting(client_for(kind, stub_api, is_async=True), c)
    loop = async_anthropic_stream_loop if kind == "anthropic" else async_chat_stream_loop
    asyncio.run(loop(client, ASYNC_TURNS))
    stages = [e.stage for e in c.events]
    assert stages.count("reactive_compact") == 1 and "clear_old_results" in stages
    assert all(check(canonical(r.body)) == [] for r in stub_api.requests)
    final = c.engine.session.state.anchor  # type: ignore[attr-defined]
    assert final is not None and final[1] == session.reported[-1]


# -- what a stream does not give -----------------------------------------------------------


def test_a_stream_calibrates_only_once_the_caller_has_read_it(stub_api: StubAPI) -> None:
    stub_api.enqueue(Reply(text="a long answer " * 20, input_tokens=4321))
    c = compactor()
    client = compacting(client_for("anthropic", stub_api), c)
    stream = client.messages.create(
        model="claude-test",
        max_tokens=10,
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
    )
    first = next(iter(stream))
    assert first.type == "message_start"
    assert c.engine.session.state.anchor is None  # type: ignore[attr-defined]
    kinds = [first.type, *(event.type for event in stream)]
    assert kinds[-1] == "message_stop" and "content_block_delta" in kinds
    assert c.engine.session.state.anchor == (1, 4321)  # type: ignore[attr-defined]


def test_an_error_mid_stream_propagates_without_a_retry_or_a_calibration(
    stub_api: StubAPI,
) -> None:
    stub_api.enqueue(MidStreamError(Reply(text="partial answer " * 10, input_tokens=999)))
    c = compactor()
    client = compacting(client_for("anthropic", stub_api), c)
    with (
        pytest.raises(anthropic.APIStatusError, match="overloaded_error"),
        client.messages.stream(
            model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        ) as stream,
    ):
        stream.get_final_message()
    assert len(stub_api.requests) == 1
    assert c.engine.session.state.anchor is None  # type: ignore[attr-defined]


def test_a_chat_stream_without_include_usage_goes_uncalibrated(stub_api: StubAPI) -> None:
    stub_api.enqueue(Reply(text="ok", input_tokens=777))
    c = compactor()
    client = compacting(client_for("openai-chat", stub_api), c)
    stream = client.chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    assert "".join(chunk.choices[0].delta.content or "" for chunk in stream) == "ok"
    assert c.engine.session.state.anchor is None  # type: ignore[attr-defined]


def test_the_responses_stream_helper_compacts_and_calibrates_like_create(
    stub_api: StubAPI,
) -> None:
    stub_api.enqueue(openai_input_exceeds_context_window(), Reply(text="done", input_tokens=555))
    c = compactor()
    client = compacting(client_for("openai-responses", stub_api), c)
    items = [{"role": "user", "content": "hi"}]
    with client.responses.stream(model="gpt-test", input=items) as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
    assert "".join(deltas) == "done" and len(stub_api.requests) == 2
    assert c.engine.session.state.anchor == (1, 555)  # type: ignore[attr-defined]
    assert items == [{"role": "user", "content": "hi"}]


def test_a_stream_with_other_errors_propagates_as_the_sdk_raised_it(stub_api: StubAPI) -> None:
    stub_api.enqueue(openai_context_length_exceeded(), openai_context_length_exceeded())
    client = compacting(client_for("openai-chat", stub_api), compactor())
    with (
        pytest.raises(openai.BadRequestError),
        client.chat.completions.stream(
            model="gpt-test", messages=[{"role": "user", "content": "hi"}]
        ),
    ):
        pass
    assert len(stub_api.requests) == 2
