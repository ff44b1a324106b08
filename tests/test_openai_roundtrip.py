"""Canonical -> Chat Completions -> canonical is the identity on the supported subset."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from context_compact.providers.openai_chat import from_openai, to_openai

TEXT = st.text(max_size=30)
TEXT_BLOCK = st.builds(lambda text: {"type": "text", "text": text}, TEXT)
TEXT_BLOCKS = st.lists(TEXT_BLOCK, max_size=3)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
TOOL_INPUT = st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=4)


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Alternating turns; each user turn after tool calls answers all of them first."""
    messages: list[dict[str, Any]] = []
    pending: list[str] = []
    for turn in range(draw(st.integers(0, 6))):
        if pending:
            results = [
                {
                    "type": "tool_result",
                    "tool_use_id": tool_id,
                    "content": draw(st.one_of(TEXT, TEXT_BLOCKS)),
                }
                for tool_id in pending
            ]
            messages.append({"role": "user", "content": results + draw(TEXT_BLOCKS)})
        else:
            messages.append({"role": "user", "content": draw(st.one_of(TEXT, TEXT_BLOCKS))})
        if draw(st.booleans()):
            messages.append({"role": "assistant", "content": draw(TEXT)})
            pending = []
            continue
        names = draw(st.lists(st.text(min_size=1, max_size=10), max_size=3))
        pending = [f"toolu_{turn}_{i}" for i in range(len(names))]
        tool_uses = [
            {"type": "tool_use", "id": tool_id, "name": name, "input": draw(TOOL_INPUT)}
            for tool_id, name in zip(pending, names, strict=True)
        ]
        messages.append({"role": "assistant", "content": draw(TEXT_BLOCKS) + tool_uses})
    return messages


@given(history=histories(), system=TEXT)
def test_canonical_to_openai_and_back_is_the_identity(
    history: list[dict[str, Any]], system: str
) -> None:
    assert from_openai(to_openai(history, system)) == (system or None, history)


@given(history=histories(), system=TEXT)
def test_translation_leaves_the_input_untouched(history: list[dict[str, Any]], system: str) -> None:
    before = copy.deepcopy(history)
    to_openai(history, system)
    assert history == before


@given(history=histories())
def test_every_tool_message_answers_a_call_of_the_assistant_turn_before_it(
    history: list[dict[str, Any]],
) -> None:
    converted = to_openai(history)
    for index, message in enumerate(converted):
        if message["role"] != "tool":
            continue
        previous = next(m for m in reversed(converted[:index]) if m["role"] != "tool")
        assert previous["role"] == "assistant"
        assert message["tool_call_id"] in {c["id"] for c in previous["tool_calls"]}


def test_raw_arguments_are_sent_verbatim_and_come_back_raw() -> None:
    broken = {"type": "tool_use", "id": "c", "name": "f", "input": {"_raw_arguments": "{oops"}}
    history = [{"role": "user", "content": "go"}, {"role": "assistant", "content": [broken]}]
    converted = to_openai(history)
    assert converted[1]["tool_calls"][0]["function"]["arguments"] == "{oops"
    assert from_openai(converted) == (None, history)


def test_base64_images_survive_the_round_trip_as_data_urls() -> None:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    history = [{"role": "user", "content": [{"type": "text", "text": "What is this?"}, image]}]
    converted = to_openai(history)
    assert converted[0]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
    }
    assert from_openai(converted) == (None, history)


def test_documented_losses_error_flags_become_a_prefix_and_thinking_is_dropped() -> None:
    history = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "tool_use", "id": "c", "name": "f", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c", "content": "boom", "is_error": True}
            ],
        },
    ]
    converted = to_openai(history)
    assert converted[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    assert converted[2] == {"role": "tool", "tool_call_id": "c", "content": "Error: boom"}


def test_system_and_developer_messages_are_joined_into_the_system_prompt() -> None:
    system, messages = from_openai(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "developer", "content": [{"type": "text", "text": "Use tools."}]},
            {"role": "user", "content": "hi"},
        ]
    )
    assert system == "Be brief.\n\nUse tools."
    assert messages == [{"role": "user", "content": "hi"}]
