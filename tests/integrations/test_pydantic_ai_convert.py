"""What history_processor returns, call by call: the original messages where nothing changed,
the original request with one part's content replaced where a result left the view, and a
clear error on what it cannot read."""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("pydantic_ai")

from adapter_helpers import log_part
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from context_compact import Compactor, InvalidHistory, MemoryStore, Policy, check
from context_compact.integrations.pydantic_ai import sync_history_processor, to_dict


def _history(turns: int, size: int = 8000) -> list:  # type: ignore[type-arg]
    out: list = [ModelRequest(parts=[UserPromptPart("read the logs")])]  # type: ignore[type-arg]
    for k in range(turns):
        call = ToolCallPart("read_log", {"part": k}, f"c{k}")
        out.append(ModelResponse(parts=[TextPart(f"part {k}"), call]))
        out.append(ModelRequest(parts=[ToolReturnPart("read_log", log_part(k)[:size], f"c{k}")]))
    return out


def test_messages_the_compactor_left_alone_come_back_as_the_very_same_objects() -> None:
    history = _history(3, size=200)
    out = sync_history_processor(Compactor(Policy.default(), MemoryStore()))(history)
    assert len(out) == len(history)
    assert all(a is b for a, b in zip(out, history, strict=True))


def test_a_cleared_return_is_its_own_request_with_only_that_parts_content_changed() -> None:
    history = _history(30)
    before = copy.deepcopy(history)
    out = sync_history_processor(Compactor(Policy.default(context_limit=12_000), MemoryStore()))(
        history
    )
    assert history == before
    assert check([to_dict((m, m.parts)) for m in out]) == []
    originals = {
        m.parts[0].tool_call_id: m for m in history if isinstance(m.parts[0], ToolReturnPart)
    }
    changed = [
        m
        for m in out
        if isinstance(m.parts[0], ToolReturnPart) and m is not originals[m.parts[0].tool_call_id]
    ]
    assert changed
    for message in changed:
        part, original = message.parts[0], originals[message.parts[0].tool_call_id].parts[0]
        assert (part.tool_name, part.timestamp) == (original.tool_name, original.timestamp)
        assert "full text at" in part.content or "Full output:" in part.content


def test_parts_become_the_blocks_the_model_reads() -> None:
    response = ModelResponse(
        parts=[
            ThinkingPart("hmm", signature="sig"),
            TextPart("reading"),
            ToolCallPart("read_log", '{"part": 1}', "c1"),
        ]
    )
    failed = ToolReturnPart("read_log", "disk on fire", "c1", outcome="failed")
    assert to_dict((response, response.parts))["content"] == [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "text", "text": "reading"},
        {"type": "tool_use", "id": "c1", "name": "read_log", "input": {"part": 1}},
    ]
    request = ModelRequest(parts=[failed])
    [block] = to_dict((request, request.parts))["content"]
    assert block["is_error"] is True and "disk on fire" in block["content"]


def test_something_that_is_not_a_model_message_is_refused_naming_where_it_is() -> None:
    processor = sync_history_processor(Compactor(Policy.default(), MemoryStore()))
    with pytest.raises(InvalidHistory, match="message 1: malformed: expected a ModelRequest"):
        processor([ModelRequest(parts=[UserPromptPart("go")]), {"role": "user"}])  # type: ignore[list-item]
