"""Compactor(format=...): the caller's format in and out, one durable session throughout."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from context_compact import Compactor, InvalidHistory, MemoryStore, Policy, check
from context_compact.formats import detect, openai_chat, openai_responses
from context_compact.testing.fakes import BenchSummarizer

BIG = "build output line that is long enough to matter\n" * 300
SYSTEM = {"role": "developer", "content": "You are a build bot."}


def responses_turn(i: int) -> list[dict[str, Any]]:
    return [
        {"id": f"rs_{i}", "type": "reasoning", "summary": [], "encrypted_content": f"enc{i}"},
        {
            "id": f"fc_{i}",
            "type": "function_call",
            "call_id": f"call_{i}",
            "name": "bash",
            "arguments": f'{{"cmd": "make {i}"}}',
        },
    ]


def compactor(**kwargs: Any) -> Compactor:
    policy = Policy.default(context_limit=6_000)
    return Compactor(policy, MemoryStore(), BenchSummarizer(), **kwargs)


def assert_reasoning_precedes_its_call(items: list[Any]) -> None:
    for i, item in enumerate(items):
        if item.get("type") == "reasoning":
            assert items[i + 1].get("type") == "function_call"
            assert items[i + 1]["call_id"] == "call_" + item["id"].removeprefix("rs_")


def test_the_responses_loop_keeps_one_session_through_compactions() -> None:
    c = compactor()
    items: list[Any] = [SYSTEM, {"role": "user", "content": "build it"}]
    for i in range(60):
        items = c.prepare(items, "build it")
        assert items[0] == SYSTEM and items[0] is not SYSTEM  # a copy of its own
        assert_reasoning_precedes_its_call(items)
        system, canonical = openai_responses.to_canonical(items)
        assert system == [SYSTEM] and check(canonical) == []
        sent = copy.deepcopy(items)
        turn = responses_turn(i)
        items += turn
        items.append({"type": "function_call_output", "call_id": f"call_{i}", "output": BIG})
        assert items[: len(sent)] == sent
    assert c.format == "openai-responses"
    stages = [e.stage for e in c.events]
    assert "session_restart" not in stages
    assert "clear_old_results" in stages
    assert len(items) < 60 * 3  # the view is compacted


def test_the_chat_loop_with_a_callers_own_list_is_recognized_by_the_log() -> None:
    c = compactor(format="openai-chat")
    history: list[Any] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "go"},
    ]
    for i in range(40):
        sent = c.prepare(history, "go")
        assert sent[0] == history[0]
        assert check(openai_chat.to_canonical(sent)[1]) == []
        call = {"id": f"c{i}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        history = [
            *history,
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": BIG},
        ]
    stages = [e.stage for e in c.events]
    assert "session_restart" not in stages and "clear_old_results" in stages


def test_a_system_message_counts_in_the_budget_and_is_never_summarized() -> None:
    long_system = {"role": "system", "content": "rule. " * 2000}
    a, b = compactor(), compactor()
    plain = [{"role": "user", "content": "go"}]
    a.prepare(plain, "go")
    b.prepare([long_system, *plain], "go")
    assert b.engine.session.state.measure() > a.engine.session.state.measure() + 1000  # type: ignore[attr-defined]


def test_a_bad_item_is_named_by_its_position_in_the_callers_list() -> None:
    c = compactor(format="openai-responses")
    items = [SYSTEM, {"role": "user", "content": "go"}, *responses_turn(0)]
    items.append({"role": "user", "content": "no output for call_0"})
    with pytest.raises(InvalidHistory, match=r"message 2: unanswered_use.*items 2-3"):
        c.prepare(items, "go")


def test_detect_names_a_format_from_the_first_item_that_decides() -> None:
    assert detect([{"role": "user", "content": "hi"}]) is None
    assert detect([{"role": "user", "content": "hi"}, *responses_turn(0)]) == "openai-responses"
    assert detect([{"role": "tool", "tool_call_id": "x", "content": ""}]) == "openai-chat"
    tool_use = {"type": "tool_use", "id": "t", "name": "n", "input": {}}
    assert detect([{"role": "assistant", "content": [tool_use]}]) == "anthropic"


def test_an_unknown_format_name_is_refused() -> None:
    with pytest.raises(ValueError, match="format='xml'"):
        compactor(format="xml")


@pytest.mark.parametrize(
    ("fmt", "lead"),
    [
        ("openai-chat", {"role": "system", "content": "be brief"}),
        ("openai-responses", {"role": "developer", "content": "be brief"}),
        ("openai-responses", {"type": "message", "role": "system", "content": "be brief"}),
    ],
)
def test_the_leading_system_item_of_the_view_is_a_copy_never_the_callers_object(
    fmt: str, lead: dict[str, Any]
) -> None:
    from context_compact import Compactor, MemoryStore, Policy

    c = Compactor(Policy.default(context_limit=12_000), MemoryStore(), format=fmt)
    given = [lead, {"role": "user", "content": "hi"}]
    view = c.prepare(given, "hi")
    assert view[0] == lead and view[0] is not lead
    assert all(item is not g for item in view for g in given)
    view[0]["content"] = "edited in the view"  # neither the next view nor the caller's
    assert c.view()[0] == lead and c.view()[0] is not view[0]
    lead["content"] = "edited by the caller after the call"
    assert c.view()[0]["content"] == "be brief"


@pytest.mark.parametrize(
    ("fmt", "history"),
    [
        (
            "openai-chat",
            [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            ],
        ),
        (
            "openai-responses",
            [
                {"role": "developer", "content": "be brief"},
                {"role": "user", "content": "hi"},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            ],
        ),
    ],
)
def test_a_resumed_session_of_a_fixed_format_sends_its_view_in_that_format_with_its_system(
    fmt: str, history: list[dict[str, Any]]
) -> None:
    from context_compact import Compactor, MemoryStore, Policy

    store = MemoryStore()
    live = Compactor(Policy.default(context_limit=12_000), store, format=fmt, session="s")
    view = live.prepare(history, "hi")
    view = live.prepare([*view, {"role": "assistant", "content": "done"}], "hi")
    resumed = Compactor(Policy.default(context_limit=12_000), store, format=fmt, session="s")
    assert json.dumps(resumed.view()) == json.dumps(live.view()) == json.dumps(view)
    # A new system prompt is journaled too; an unchanged one is not journaled again.
    changed = [{**history[0], "content": "be thorough"}, *view[1:]]
    after = live.prepare(changed, "hi")
    again = Compactor(Policy.default(context_limit=12_000), store, format=fmt, session="s")
    assert json.dumps(again.view()) == json.dumps(after) and after[0]["content"] == "be thorough"
    settings = [r for r in store.records("s") if r["kind"] == "setting"]
    assert len(settings) == 2
