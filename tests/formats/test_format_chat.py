"""OpenAI Chat Completions messages <-> canonical: lossless, valid, SDK objects accepted."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion

from context_compact import InvalidHistory, check
from context_compact.formats import openai_chat as fmt
from histories import histories

HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse."},
    {"role": "developer", "content": [{"type": "text", "text": "Prefer rg."}]},
    {"role": "user", "content": "what does a.py print?", "name": "ana"},
    {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "tool_calls": [
            {
                "id": "call_A",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path":"a.py"}'},
            },
            {"id": "call_B", "type": "function", "function": {"name": "ls", "arguments": ""}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_A", "content": "print('a')"},
    {"role": "tool", "tool_call_id": "call_B", "content": [{"type": "text", "text": "a.py"}]},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "and this?"},
            {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}},
            {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
        ],
    },
    {"role": "assistant", "content": "It prints a."},
    {"role": "developer", "content": "Mid-session note."},
    {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]},
]


def test_a_whole_history_converts_to_a_valid_history_and_back_to_the_same_messages() -> None:
    before = copy.deepcopy(HISTORY)
    system, messages = fmt.to_canonical(HISTORY)
    assert system == HISTORY[:2]
    assert check(messages) == []
    assert fmt.from_canonical(messages, system) == HISTORY
    assert before == HISTORY


def test_tool_messages_answer_the_calls_with_the_callers_ids_and_stay_apart_from_users() -> None:
    _, messages = fmt.to_canonical(HISTORY)
    uses = [b["id"] for b in messages[1]["content"] if b["type"] == "tool_use"]
    assert uses == ["call_A", "call_B"]
    assert [b["tool_use_id"] for b in messages[2]["content"]] == ["call_A", "call_B"]
    assert messages[3]["role"] == "user" and messages[3]["content"][0]["type"] == "text"


def test_a_chat_completion_message_appended_as_the_sdk_returns_it_comes_back_as_its_json() -> None:
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "refusal": None,
                    "tool_calls": [
                        {
                            "id": "call_X",
                            "type": "function",
                            "function": {"name": "ls", "arguments": "{}"},
                        }
                    ],
                },
            }
        ],
    }
    message = ChatCompletion.model_validate(completion).choices[0].message
    history = [{"role": "user", "content": "ls"}, message]
    system, messages = fmt.to_canonical(history)
    assert check(messages) == []
    assert fmt.from_canonical(messages, system) == [
        history[0],
        completion["choices"][0]["message"],  # type: ignore[index]
    ]


@given(histories(max_turns=8, sizes=st.integers(0, 50)))
def test_chat_messages_round_trip_through_canonical_for_any_valid_history(
    history: list[dict[str, Any]],
) -> None:
    items = fmt.from_canonical(history)
    system, messages = fmt.to_canonical(items)
    assert system == []
    assert check(messages) == []
    assert fmt.from_canonical(messages) == items


def test_tool_calls_that_are_not_a_list_are_refused_naming_the_item() -> None:
    bad = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": "call_A"},
    ]
    with pytest.raises(InvalidHistory, match=r"message 1: malformed: tool_calls must be a list"):
        fmt.to_canonical(bad)


def test_a_call_whose_function_is_not_an_object_is_refused_naming_the_item() -> None:
    call = {"id": "call_A", "type": "function", "function": "read"}
    bad = [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [call]}]
    with pytest.raises(InvalidHistory, match=r"message 1: .*function must be an object, got str"):
        fmt.to_canonical(bad)
