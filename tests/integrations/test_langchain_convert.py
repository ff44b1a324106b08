"""What CompactionMiddleware sends, call by call: originals where nothing changed, the same
ToolMessage with new content where a result left the view, a clear error on what it cannot
read, and the caller's messages never touched."""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("langchain.agents.middleware")
pytest.importorskip("langchain_anthropic")

from adapter_helpers import log_part
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from context_compact import Compactor, InvalidHistory, MemoryStore, Policy, check
from context_compact.integrations.langchain import CompactionMiddleware, split, to_dict

MODEL = ChatAnthropic(model="claude-test", api_key="sk-stub")


def _history(turns: int, size: int = 8000) -> list[BaseMessage]:
    out: list[BaseMessage] = [HumanMessage("read the logs", id="h0")]
    for k in range(turns):
        call = {"id": f"c{k}", "name": "read_log", "args": {"part": k}, "type": "tool_call"}
        out.append(AIMessage(content=f"part {k}", tool_calls=[call], id=f"a{k}"))
        out.append(
            ToolMessage(log_part(k)[:size], tool_call_id=f"c{k}", name="read_log", id=f"t{k}")
        )
    return out


def _send(middleware: CompactionMiddleware, messages: list[BaseMessage]) -> list[BaseMessage]:
    sent: list[list[BaseMessage]] = []

    def handler(request: ModelRequest) -> ModelResponse:  # type: ignore[type-arg]
        sent.append(request.messages)
        return ModelResponse(result=[AIMessage("done")])

    middleware.wrap_model_call(ModelRequest(model=MODEL, messages=messages), handler)
    return sent[0]


def _as_dicts(messages: list[BaseMessage]) -> list[dict]:  # type: ignore[type-arg]
    _, units = split(messages)
    return [to_dict(u) for u in units]


def test_messages_the_compactor_left_alone_are_sent_as_the_very_same_objects() -> None:
    history = _history(3, size=200)
    sent = _send(CompactionMiddleware(Compactor(Policy.default(), MemoryStore())), history)
    assert len(sent) == len(history)
    assert all(a is b for a, b in zip(sent, history, strict=True))


def test_a_cleared_result_is_its_own_tool_message_with_only_the_content_changed() -> None:
    history = _history(30)
    before = copy.deepcopy(history)
    sent = _send(
        CompactionMiddleware(Compactor(Policy.default(context_limit=12_000), MemoryStore())),
        history,
    )
    assert history == before  # the state's messages are never modified
    assert check(_as_dicts(sent)) == []
    originals = {m.tool_call_id: m for m in history if isinstance(m, ToolMessage)}
    changed = [m for m in sent if isinstance(m, ToolMessage) and m is not originals[m.tool_call_id]]
    assert changed
    for message in changed:
        original = originals[message.tool_call_id]
        assert (message.id, message.name, message.status) == (original.id, original.name, "success")
        assert message.content != original.content
        assert "full text at" in message.content or "Full output:" in message.content


def test_leading_system_messages_are_sent_first_and_never_compacted() -> None:
    system = SystemMessage("You read logs. " * 50)
    history = [system, *_history(30)]
    sent = _send(
        CompactionMiddleware(Compactor(Policy.default(context_limit=12_000), MemoryStore())),
        history,
    )
    assert sent[0] is system
    assert not any(isinstance(m, SystemMessage) for m in sent[1:])


def test_a_failed_tool_call_keeps_its_error_status_through_the_conversion() -> None:
    failed = ToolMessage("boom", tool_call_id="c0", status="error")
    call = {"id": "c0", "name": "read_log", "args": {}, "type": "tool_call"}
    dicts = _as_dicts([HumanMessage("go"), AIMessage("", tool_calls=[call]), failed])
    assert dicts[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c0", "content": "boom", "is_error": True}
    ]
    assert dicts[1] == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "c0", "name": "read_log", "input": {}}],
    }


def test_a_message_type_it_cannot_read_is_refused_naming_where_it_is() -> None:
    history = [HumanMessage("go"), ChatMessage(content="hi", role="critic")]
    middleware = CompactionMiddleware(Compactor(Policy.default(), MemoryStore()))
    with pytest.raises(InvalidHistory, match="message 1: malformed: ChatMessage is not supported"):
        _send(middleware, history)


def test_a_tool_message_without_its_call_is_refused_not_repaired() -> None:
    history = [HumanMessage("go"), ToolMessage("out", tool_call_id="nowhere")]
    middleware = CompactionMiddleware(Compactor(Policy.default(), MemoryStore()))
    with pytest.raises(InvalidHistory, match="orphan_result"):
        _send(middleware, history)
