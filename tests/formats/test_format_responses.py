"""OpenAI Responses items <-> canonical: lossless, valid, and readable where it can be."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from openai.types.responses import Response

from context_compact import InvalidHistory, check
from context_compact.formats import openai_responses as fmt
from histories import histories

REASONING = {
    "id": "rs_01",
    "type": "reasoning",
    "summary": [{"type": "summary_text", "text": "Look at the file first."}],
    "encrypted_content": "gAAAAABo-opaque-ciphertext==",
}
CALL = {
    "id": "fc_01",
    "type": "function_call",
    "call_id": "call_A",
    "name": "read_file",
    "arguments": '{"path": "a.py"}',
    "status": "completed",
}
OUTPUT = {"type": "function_call_output", "call_id": "call_A", "output": "print('a')\n" * 50}
ANSWER = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "It prints a.", "annotations": []}],
}
COMPACTION = {"id": "cmp_01", "type": "compaction", "encrypted_content": "opaque-summary"}

SESSION: list[dict[str, Any]] = [
    {"role": "developer", "content": "You are terse."},
    {"role": "user", "content": "what does a.py print?"},
    REASONING,
    CALL,
    OUTPUT,
    {"type": "reasoning", "id": "rs_02", "summary": [], "encrypted_content": "x"},
    ANSWER,
    {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "and this screenshot?"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBO", "detail": "low"},
            {"type": "input_file", "file_id": "file-1"},
        ],
    },
    COMPACTION,
    {"role": "developer", "content": "Mid-session instruction."},
    {"type": "custom_tool_call", "call_id": "call_B", "name": "patch", "input": "*** Begin"},
    {"type": "custom_tool_call_output", "call_id": "call_B", "output": "applied"},
    {
        "type": "computer_call",
        "id": "cu_1",
        "call_id": "call_C",
        "action": {"type": "screenshot"},
        "pending_safety_checks": [],
        "status": "completed",
    },
    {
        "type": "computer_call_output",
        "call_id": "call_C",
        "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,AAAA"},
    },
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search"}},
    {"role": "assistant", "content": "done"},
]


def test_a_whole_session_converts_to_a_valid_history_and_back_to_the_same_items() -> None:
    before = copy.deepcopy(SESSION)
    system, messages = fmt.to_canonical(SESSION)
    assert system == [SESSION[0]]
    assert check(messages) == []
    assert fmt.from_canonical(messages, system) == SESSION
    assert before == SESSION


def test_calls_and_outputs_become_tool_pairs_with_the_callers_ids() -> None:
    _, messages = fmt.to_canonical([{"role": "user", "content": "go"}, REASONING, CALL, OUTPUT])
    assistant, results = messages[1], messages[2]
    assert [b["type"] for b in assistant["content"]] == ["passthrough", "tool_use"]
    assert assistant["content"][1]["id"] == "call_A"
    assert assistant["content"][1]["input"] == {"path": "a.py"}
    assert results["content"][0]["tool_use_id"] == "call_A"
    assert results["content"][0]["content"] == OUTPUT["output"]


def test_encrypted_reasoning_and_compaction_items_pass_through_whole_and_in_place() -> None:
    _, messages = fmt.to_canonical(SESSION[1:])
    items = fmt.from_canonical(messages)
    assert items.index(REASONING) + 1 == items.index(CALL)
    assert COMPACTION in items
    passthrough = [b for m in messages for b in m["content"] if isinstance(m["content"], list)]
    assert {"type": "passthrough", "format": "openai-responses", "item": REASONING} in passthrough


def test_a_compacted_result_comes_back_as_the_output_of_the_same_call() -> None:
    _, messages = fmt.to_canonical([CALL, OUTPUT])
    result = {**messages[1]["content"][0], "content": "[cleared: see file x]"}
    items = fmt.from_canonical([messages[0], {"role": "user", "content": [result]}])
    assert items[1] == {**OUTPUT, "output": "[cleared: see file x]"}


def test_output_items_as_the_sdk_returns_them_come_back_as_the_json_it_sent() -> None:
    payload = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "gpt-test",
        "output": [REASONING, CALL],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    response = Response.model_validate(payload)
    items = [{"role": "user", "content": "go"}, *response.output, OUTPUT]
    system, messages = fmt.to_canonical(items)
    assert check(messages) == []
    assert fmt.from_canonical(messages, system) == [items[0], *payload["output"], OUTPUT]


def test_an_item_the_converter_cannot_place_is_an_error_naming_it() -> None:
    with pytest.raises(InvalidHistory, match="message 2: malformed: function_call_output"):
        fmt.to_canonical([CALL, CALL, {"type": "function_call_output"}])
    with pytest.raises(InvalidHistory, match=r"message 1: malformed: .*'type'"):
        fmt.to_canonical([{"role": "user", "content": "go"}, {"content": "x"}])


@given(histories(max_turns=8, sizes=st.integers(0, 50)))
def test_items_round_trip_through_canonical_for_any_valid_history(
    history: list[dict[str, Any]],
) -> None:
    items = fmt.from_canonical(history)
    system, messages = fmt.to_canonical(items)
    assert system == []
    assert check(messages) == []
    assert fmt.from_canonical(messages) == items
