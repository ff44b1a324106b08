"""What a summarizer is given, for histories from every format: what a model may be sent.
No format converter's bookkeeping (the ``openai`` key), no passthrough block (an item with no
canonical form): a summarizer that forwards its messages to the Anthropic API is accepted."""

from __future__ import annotations

import json
from typing import Any

from context_compact import Compactor, MemoryStore, Policy
from context_compact.messages import FORMAT_META
from context_compact.summary.contract import for_summarizer


def _items(turns: int) -> list[Any]:
    items: list[Any] = [{"role": "user", "content": "read every log part"}]
    for k in range(turns):
        items += [
            {"type": "reasoning", "id": f"rs_{k}", "summary": [], "encrypted_content": "gAAAA" * 9},
            {
                "type": "function_call",
                "id": f"fc_{k}",
                "call_id": f"call_{k}",
                "name": "read_log",
                "arguments": json.dumps({"part": k}),
                "status": "completed",
            },
            {"type": "function_call_output", "call_id": f"call_{k}", "output": f"part {k} " * 400},
        ]
    return items


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def _types(value: Any) -> set[str]:
    if isinstance(value, dict):
        own = {value["type"]} if isinstance(value.get("type"), str) else set()
        return own | {t for v in value.values() for t in _types(v)}
    if isinstance(value, list):
        return {t for v in value for t in _types(v)}
    return set()


def test_a_summarizer_of_a_responses_history_never_sees_the_openai_key_or_passthrough() -> None:
    given: list[Any] = []

    def summarizer(messages: list[Any]) -> str:
        given.append(messages)
        return "summary of the reading so far"

    cc = Compactor(Policy.default(context_limit=4_000), MemoryStore(), summarizer)
    items = _items(1)
    for k in range(1, 30):
        items = cc.prepare(items, "read every log part") + _items(k + 1)[-3:]
    assert given, "the history was never summarized"
    for messages in given:
        assert FORMAT_META not in _keys(messages)
        assert "passthrough" not in _types(messages)
        assert "encrypted_content" not in json.dumps(messages)


def test_an_anthropic_message_reaches_the_summarizer_as_the_same_object() -> None:
    message = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    assert for_summarizer(message) is message
