"""google.genai ``Content`` / ``Part`` as canonical messages and back (``adk_convert``): the
contents the compactor keeps come back as the very objects ADK gave, a result it replaced as
its own part with only the response changed, thought signatures untouched."""

from __future__ import annotations

import copy
from typing import Any

import pytest

pytest.importorskip("google.adk", reason="the adk extra is not installed")

from google.genai import types
from hypothesis import given
from hypothesis import strategies as st

from context_compact import check
from context_compact.integrations.adk_convert import Converter, latest_request, restore


def _call(k: int, signature: bytes | None = None, with_id: bool = True) -> types.Part:
    call = types.FunctionCall(id=f"call_{k}" if with_id else None, name="read", args={"k": k})
    return types.Part(function_call=call, thought_signature=signature)


def _response(k: int, value: Any, with_id: bool = True) -> types.Part:
    response = types.FunctionResponse(
        id=f"call_{k}" if with_id else None, name="read", response={"result": value}
    )
    return types.Part(function_response=response)


def _user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def _turn(k: int, value: Any, signature: bytes | None = None) -> list[types.Content]:
    said = [types.Part(text=f"thinking about {k}", thought=True, thought_signature=signature)]
    return [
        types.Content(role="model", parts=[*said, types.Part(text=f"reading {k}"), _call(k)]),
        types.Content(role="user", parts=[_response(k, value)]),
    ]


@st.composite
def histories(draw: Any) -> list[types.Content]:
    contents = [_user(draw(st.text(min_size=1, max_size=20)))]
    for k in range(draw(st.integers(0, 6))):
        value = draw(st.one_of(st.text(max_size=40), st.integers(), st.lists(st.integers())))
        signature = draw(st.one_of(st.none(), st.binary(min_size=1, max_size=8)))
        contents += _turn(k, value, signature)
    return contents


@given(histories())
def test_a_view_the_compactor_left_alone_is_the_very_contents_adk_gave(
    contents: list[types.Content],
) -> None:
    converter = Converter()
    converted = converter.convert(contents)
    view = [copy.deepcopy(item.message) for item in converted]
    back = restore(view, converted, converter)
    assert len(back) == len(contents)
    assert all(a is b for a, b in zip(back, contents, strict=True))
    assert check(view) == []


def test_a_call_and_its_response_are_a_tool_use_and_its_result_with_adk_s_result_unwrapped() -> (
    None
):
    contents = [_user("go"), *_turn(0, "needle text", b"sig"), *_turn(1, {"rows": 2})]
    messages = [item.message for item in Converter().convert(contents)]
    assert messages[1]["content"][0] == {
        "type": "thinking",
        "thinking": "thinking about 0",
        "signature": "c2ln",
    }
    assert messages[1]["content"][2] == {
        "type": "tool_use",
        "id": "call_0",
        "name": "read",
        "input": {"k": 0},
    }
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_0", "content": "needle text"}
    ]
    assert messages[4]["content"][0]["content"] == '{"rows": 2}'


def test_a_replaced_result_is_its_own_part_with_only_the_response_changed() -> None:
    contents = [_user("go"), *_turn(0, "x" * 5_000)]
    converter = Converter()
    converted = converter.convert(contents)
    view = [copy.deepcopy(item.message) for item in converted]
    view[2]["content"][0]["content"] = "[preview: saved to a file]"
    back = restore(view, converted, converter)
    assert back[0] is contents[0] and back[1] is contents[1]
    part = back[2].parts[0]
    original = contents[2].parts[0]
    assert part.function_response.response == {"result": "[preview: saved to a file]"}
    assert (part.function_response.id, part.function_response.name) == ("call_0", "read")
    assert original.function_response.response == {"result": "x" * 5_000}


def test_a_cleared_call_keeps_its_thought_signature_and_the_parts_beside_it() -> None:
    contents = [_user("go"), *_turn(0, "ok", b"sig-0")]
    contents[1].parts[2] = _call(0, signature=b"call-sig")
    converter = Converter()
    converted = converter.convert(contents)
    view = [copy.deepcopy(item.message) for item in converted]
    view[1]["content"][2]["input"] = {"input_cleared": "[cleared]"}
    back = restore(view, converted, converter)
    thought, text, call = back[1].parts
    assert thought is contents[1].parts[0] and text is contents[1].parts[1]
    assert call.thought_signature == b"call-sig"
    assert call.function_call.args == {"input_cleared": "[cleared]"}
    assert call.function_call.id == "call_0"


def test_a_summary_the_compactor_wrote_is_a_new_user_content() -> None:
    contents = [_user("go"), *_turn(0, "ok")]
    converter = Converter()
    converted = converter.convert(contents)
    summary = {"role": "user", "content": "<summary>read part 0</summary>"}
    back = restore([converted[0].message, summary], converted, converter)
    assert back[0] is contents[0]
    assert back[1].role == "user" and back[1].parts[0].text == summary["content"]


def test_calls_without_ids_are_paired_with_their_responses_by_name_and_order() -> None:
    contents = [
        _user("go"),
        types.Content(role="model", parts=[_call(0, with_id=False), _call(1, with_id=False)]),
        types.Content(
            role="user", parts=[_response(0, "a", with_id=False), _response(1, "b", with_id=False)]
        ),
    ]
    messages = [item.message for item in Converter().convert(contents)]
    uses = [b["id"] for b in messages[1]["content"]]
    results = [b["tool_use_id"] for b in messages[2]["content"]]
    assert uses == results == ["read-1", "read-2"]
    assert check(messages) == []


def test_contents_without_parts_are_left_out_and_the_request_is_the_newest_user_text() -> None:
    contents = [_user("first"), types.Content(role="model", parts=[]), *_turn(0, "ok")]
    contents.append(_user("second"))
    assert len(Converter().convert(contents)) == 4
    assert latest_request(contents) == "second"
    assert latest_request(contents[:-1]) == "first"
