"""Values a history cannot hold are refused up front, where they are: the message index, the
path inside it and the rule, by every entry point and before any state changes; not later, as
a crash in a summary or in hashing, nor as a fault of the message before them."""

from __future__ import annotations

import asyncio
import copy
import re
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from context_compact import Compactor, FileStore, InvalidHistory, Policy, check
from context_compact.integrations import compacting
from histories import call, results, user

HUGE = 10**5_000  # 5,001 digits: over Python's 4,300 for int <-> str


def answered_by(content: Any) -> list[dict[str, Any]]:
    result = {"type": "tool_result", "tool_use_id": "t1", "content": content}
    return [user("go"), call("t1"), {"role": "user", "content": [result]}]


def with_input(value: Any) -> list[dict[str, Any]]:
    use = {"type": "tool_use", "id": "t1", "name": "bash", "input": {"n": value}}
    return [user("go"), {"role": "assistant", "content": [use]}, results(("t1", "ok"))]


# name: (history, index, rule, path in the detail)
BAD = {
    "a number as a tool result": (answered_by(42), 2, "malformed", "content[0].content: "),
    "a bytes tool result": (
        answered_by(b"\x00\xff"),
        2,
        "unserializable",
        "content[0].content: bytes",
    ),
    "a string in a result's block list": (
        answered_by(["x"]),
        2,
        "malformed",
        "content[0].content[0]: ",
    ),
    "an int of 5,001 digits": (with_input(HUGE), 1, "unserializable", "content[0].input.n: an int"),
}


def refused(error: InvalidHistory, case: str) -> None:
    _, index, rule, where = BAD[case]
    assert (error.index, error.rule) == (index, rule), str(error)
    assert re.search(rf"message {index}: {rule}: {re.escape(where)}", str(error)), str(error)


@pytest.mark.parametrize("case", list(BAD))
def test_check_names_the_bad_value_where_it_is_and_nothing_else(case: str) -> None:
    history, index, rule, where = BAD[case]
    (violation,) = check(history)
    assert (violation.index, violation.rule) == (index, rule)
    assert violation.detail.startswith(where)


METHODS = [
    "prepare",
    "record",
    "compact_history",
    "reactive_compact",
    "aprepare",
    "arecord",
    "acompact_history",
    "areactive_compact",
]


def call_method(c: Compactor, method: str, history: list[Any]) -> Any:
    args: tuple[Any, ...] = (history,) if method.endswith("record") else (history, "go")
    answer = getattr(c, method)(*args)
    return asyncio.run(answer) if method.startswith("a") else answer


@pytest.mark.parametrize("policy", ["default", "seed"])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("case", list(BAD))
def test_every_entry_point_refuses_the_bad_value_before_the_session_changes(
    tmp_path: Path, policy: str, method: str, case: str
) -> None:
    store = FileStore(tmp_path)
    c = Compactor(Policy.default() if policy == "default" else Policy.seed(echo=False), store)
    good = with_input(1)
    c.prepare(good, "go")
    before, sid = c.view(), c.session_id
    logged = list(store.records(sid)) if sid else []
    history = [*good, *copy.deepcopy(BAD[case][0])]  # the same shape, after a good turn
    for message in history[3:]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            block.update({"id": "t2"} if "id" in block else {})
            block.update({"tool_use_id": "t2"} if "tool_use_id" in block else {})
    with pytest.raises(InvalidHistory) as error:
        call_method(c, method, history)
    _, index, rule, where = BAD[case]
    assert (error.value.index, error.value.rule) == (index + 3, rule), str(error.value)
    assert where in str(error.value)
    assert c.view() == before
    assert (list(store.records(sid)) if sid else []) == logged
    assert c.prepare([*good, user("and now?")], "and now?")[-1] == user("and now?")


def offline(client: Any) -> Any:
    """An SDK client that nothing can answer: a request that got out fails to connect."""
    return client(api_key="test", base_url="http://127.0.0.1:9", max_retries=0)


@pytest.mark.parametrize("case", list(BAD))
def test_the_anthropic_drop_in_client_refuses_the_bad_value_before_sending(
    tmp_path: Path, case: str
) -> None:
    c = Compactor(Policy.default(), FileStore(tmp_path))
    client = compacting(offline(anthropic.Anthropic), c)
    with pytest.raises(InvalidHistory) as error:
        client.messages.create(model="m", max_tokens=10, messages=BAD[case][0])
    refused(error.value, case)
    assert c.session_id is None or c.view() == []


CHAT_BAD = {
    "a number as a tool result": ({"role": "tool", "tool_call_id": "t1", "content": 42}, 2),
    "a bytes tool result": ({"role": "tool", "tool_call_id": "t1", "content": b"\x00"}, 2),
    "an int of 5,001 digits": ({"role": "user", "content": "more", "n": HUGE}, 3),
}


@pytest.mark.parametrize("case", list(CHAT_BAD))
def test_the_openai_drop_in_client_refuses_the_bad_item_before_sending(
    tmp_path: Path, case: str
) -> None:
    c = Compactor(Policy.default(), FileStore(tmp_path))
    tool_call = {"id": "t1", "type": "function", "function": {"name": "b", "arguments": "{}"}}
    items = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [tool_call]},
        {"role": "tool", "tool_call_id": "t1", "content": "ok"},
    ]
    bad, index = CHAT_BAD[case]
    items = [*items[:index], bad]
    client = compacting(offline(openai.OpenAI), c)
    with pytest.raises(InvalidHistory) as error:
        client.chat.completions.create(model="m", messages=items)
    assert error.value.index == index and f"message {index}: " in str(error.value)


def test_a_chat_list_with_an_int_too_long_to_hash_where_the_view_was_is_refused_by_name(
    tmp_path: Path,
) -> None:
    """The format edge hashes the caller's items where they part from the view it returned,
    to find what it has seen: an item the JSON encoder cannot write is the engine's check to
    name, not a bare ValueError from the hashing."""
    c = Compactor(Policy.default(), FileStore(tmp_path), format="openai-chat")
    items: list[Any] = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok"}]
    c.prepare(items, "go")
    before = c.view()
    bad = {"role": "assistant", "content": "ok", "n": HUGE}  # in place of the view's item 1
    with pytest.raises(InvalidHistory, match=r"message 1: unserializable: .*an int of more"):
        c.prepare([items[0], bad], "go")
    assert c.view() == before
