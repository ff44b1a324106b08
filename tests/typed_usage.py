"""A user's own strictly typed code around the library, checked by mypy (the project's
``files`` list names this file) and never run: plain ``dict[str, Any]`` histories go in and
come back out as the same type, and so do the library's typed ``Message`` lists."""

from __future__ import annotations

from typing import Any

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
