"""A user's own strictly typed code around the library, checked by mypy (the project's
``files`` list names this file) and never run: plain ``dict[str, Any]`` histories go in and
come back out as the same type, and so do the library's typed ``Message`` lists and the
SDKs' typed params (Anthropic ``MessageParam``, OpenAI Chat and Responses items)."""

from __future__ import annotations

from typing import Any

from anthropic.types import MessageParam, ToolParam
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ResponseInputItemParam

from context_compact import Compactor, Policy
from context_compact.messages import Message
from context_compact.summary import SummaryRequest, SummaryResult
from context_compact.testing import ScriptedProvider, text_reply, tool_call


def turn(compactor: Compactor, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    view: list[dict[str, Any]] = compactor.prepare(messages, "fix the failing test")
    compactor.record(messages)
    messages = compactor.compact_history(messages, "fix the failing test")
    messages = compactor.reactive_compact(messages, "fix the failing test")
    return view + compactor.view()


def typed_turn(compactor: Compactor, messages: list[Message]) -> list[Message]:
    view: list[Message] = compactor.prepare(messages, "fix the failing test")
    return view


def scripted() -> ScriptedProvider:
    messages: list[Message] = [{"role": "user", "content": "list the files"}]
    steps = [tool_call("bash", {"command": "ls"}), text_reply("done")]
    messages.append(steps[0])
    return ScriptedProvider(steps)


def plain_summary(messages: list[dict[str, Any]]) -> str:
    return f"{len(messages)} messages"


class Summary:
    def summarize(self, ask: SummaryRequest) -> SummaryResult:
        return SummaryResult(f"{len(ask.messages)} messages, after {ask.previous}")


def summarizers() -> list[Compactor]:
    # A plain callable over the user's own dicts, a typed summarizer, and a lambda.
    return [
        Compactor(Policy.default(), summarizer=plain_summary),
        Compactor(Policy.default(), summarizer=Summary()),
        Compactor(Policy.seed(), summarizer=lambda messages: "summary"),
    ]


def sdk_params(
    compactor: Compactor,
    anthropic_history: list[MessageParam],
    chat_history: list[ChatCompletionMessageParam],
    responses_input: list[ResponseInputItemParam],
) -> None:
    # The SDKs' own typed params go in, and what comes back is sent as it is.
    anthropic_view: list[MessageParam] = compactor.prepare(anthropic_history, "fix it")
    chat_view: list[ChatCompletionMessageParam] = compactor.prepare(chat_history, "fix it")
    responses_view = compactor.reactive_compact(responses_input, "fix it")
    compactor.set_request(system="be brief", tools=[tool_param()])
    compactor.observe(3)
    del anthropic_view, chat_view
    send(responses_view)


def tool_param() -> ToolParam:
    return {"name": "bash", "input_schema": {"type": "object"}}


def send(items: list[ResponseInputItemParam]) -> int:
    return len(items)


async def async_calls(compactor: Compactor, history: list[MessageParam]) -> list[MessageParam]:
    await compactor.arecord(history)
    return await compactor.aprepare(history, "fix it")
