from __future__ import annotations

from typing import Any

import pytest

from context_compact.providers.base import ModelReply, Provider, Usage
from context_compact.testing.model import (
    FakeContextOverflow,
    ScriptedProvider,
    ScriptExhausted,
    text_reply,
    tool_call,
    tool_calls,
)

SYSTEM = "You are a test."


def ask(provider: ScriptedProvider, messages: list[dict[str, Any]] | None = None) -> ModelReply:
    return provider.complete(
        system=SYSTEM,
        messages=messages if messages is not None else [{"role": "user", "content": "hi"}],
        tools=[],
        max_tokens=100,
    )


def test_a_scripted_provider_satisfies_the_provider_protocol() -> None:
    provider: Provider = ScriptedProvider([], name="fake", model="scripted")
    assert (provider.name, provider.model) == ("fake", "scripted")


def test_an_assistant_message_with_tool_use_stops_for_tools() -> None:
    provider = ScriptedProvider([tool_call("bash", {"command": "ls"})])
    reply = ask(provider)
    assert reply.stop_reason == "tool_use"
    assert reply.tool_uses == [
        {"type": "tool_use", "name": "bash", "input": {"command": "ls"}, "id": "toolu_fake_0001"}
    ]


def test_a_text_message_or_plain_string_ends_the_turn() -> None:
    provider = ScriptedProvider([text_reply("done"), "also done"])
    first, second = ask(provider), ask(provider)
    assert (first.stop_reason, first.text) == ("end_turn", "done")
    assert (second.stop_reason, second.text) == ("end_turn", "also done")
    assert second.message == text_reply("also done")


def test_a_model_reply_step_keeps_its_own_usage_and_stop_reason() -> None:
    scripted = ModelReply(text_reply("cut"), stop_reason="max_tokens", usage=Usage(7, 3))
    reply = ask(ScriptedProvider([scripted]))
    assert reply.stop_reason == "max_tokens"
    assert reply.usage == Usage(7, 3)


def test_usage_is_estimated_at_four_characters_a_token_when_a_step_gives_none() -> None:
    long_messages = [{"role": "user", "content": "x" * 4000}]
    reply = ask(ScriptedProvider([text_reply("y" * 400)]), long_messages)
    assert 1000 < reply.usage.input_tokens < 1050
    assert 100 < reply.usage.output_tokens < 120


def test_tool_use_ids_count_up_per_provider_and_explicit_ids_are_kept() -> None:
    script = [
        tool_calls([("read_file", {"path": "a"}), ("glob", {"pattern": "*"}, "mine")]),
        tool_call("bash", {"command": "ls"}, text="Listing."),
    ]
    first = ScriptedProvider(script)
    ids = [b["id"] for _ in range(2) for b in ask(first).tool_uses]
    assert ids == ["toolu_fake_0001", "mine", "toolu_fake_0002"]
    second = ScriptedProvider(script)
    assert [b["id"] for b in ask(second).tool_uses] == ["toolu_fake_0001", "mine"]
    assert "id" not in script[0]["content"][0]


def test_an_exception_step_is_raised_from_complete() -> None:
    refusal = FakeContextOverflow(250_000, 200_000)
    provider = ScriptedProvider([refusal, TimeoutError, text_reply("recovered")])
    with pytest.raises(FakeContextOverflow) as caught:
        ask(provider)
    assert caught.value is refusal
    with pytest.raises(TimeoutError):
        ask(provider)
    assert ask(provider).text == "recovered"


def test_fake_context_overflow_looks_like_anthropics_400() -> None:
    error = FakeContextOverflow(250_000, 200_000)
    message = "prompt is too long: 250000 tokens > 200000 maximum"
    assert error.status_code == 400
    assert error.body == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": message},
    }
    assert str(error) == message


def test_a_callable_step_answers_from_what_the_loop_sent() -> None:
    def echo_last_result(
        messages: list[dict[str, Any]], system: str, tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        result = messages[-1]["content"][0]["content"]
        return text_reply(f"{system} saw {result}")

    provider = ScriptedProvider([echo_last_result])
    history = [
        {"role": "user", "content": "go"},
        tool_call("bash", {"command": "ls"}, "t1"),
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}],
        },
    ]
    assert ask(provider, history).text == "You are a test. saw a.py"


def test_every_call_is_recorded_as_a_deep_copy() -> None:
    provider = ScriptedProvider(["one", "two"])
    messages: list[dict[str, Any]] = [{"role": "user", "content": "first"}]
    ask(provider, messages)
    messages[0]["content"] = "changed"
    messages.append({"role": "assistant", "content": "one"})
    ask(provider, messages)
    assert provider.calls[0] == {
        "system": SYSTEM,
        "messages": [{"role": "user", "content": "first"}],
        "tools": [],
        "max_tokens": 100,
    }
    assert len(provider.calls[1]["messages"]) == 2


def test_a_served_message_is_a_fresh_copy_of_the_script() -> None:
    step = text_reply("same")
    provider = ScriptedProvider([step, step])
    first = ask(provider)
    first.message["content"][0]["text"] = "mutated by the loop"
    assert ask(provider).text == "same"


def test_an_exhausted_script_raises_and_names_the_call_count() -> None:
    provider = ScriptedProvider(["only"])
    ask(provider)
    with pytest.raises(ScriptExhausted, match=r"after 1 step\(s\); call 2 has no step"):
        ask(provider)
    assert issubclass(ScriptExhausted, RuntimeError)
    assert len(provider.calls) == 2


def test_a_context_window_refuses_large_prompts_before_using_a_step() -> None:
    provider = ScriptedProvider(["fits"], context_window=500)
    with pytest.raises(FakeContextOverflow) as caught:
        ask(provider, [{"role": "user", "content": "x" * 4000}])
    assert caught.value.status_code == 400
    assert "prompt is too long" in str(caught.value)
    assert ask(provider).text == "fits"
    assert len(provider.calls) == 2


def test_a_step_of_the_wrong_kind_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="step 1"):
        ask(ScriptedProvider([{"role": "user", "content": "not a reply"}]))


def test_a_generator_can_be_the_script() -> None:
    provider = ScriptedProvider(f"reply {i}" for i in range(3))
    assert [ask(provider).text for _ in range(3)] == ["reply 0", "reply 1", "reply 2"]
