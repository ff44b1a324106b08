"""What CompactingSession stores and returns: every item kept in the inner session, stored
items back where nothing changed, an output it cleared as the stored item with a new output."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agents")

from adapter_helpers import log_part
from agents import SQLiteSession

from context_compact import Compactor, InvalidHistory, MemoryStore, Policy, check
from context_compact.formats.openai_responses import to_canonical
from context_compact.integrations.openai_agents import CompactingSession


def _items(turns: int, size: int = 8000) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "content": "read the logs"}]
    for k in range(turns):
        out.append(
            {
                "id": f"msg_{k}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": f"part {k}", "annotations": []}],
            }
        )
        call = {"type": "function_call", "call_id": f"c{k}", "name": "read_log", "id": f"fc_{k}"}
        out.append({**call, "arguments": f'{{"part": {k}}}'})
        out.append(
            {"type": "function_call_output", "call_id": f"c{k}", "output": log_part(k)[:size]}
        )
    return out


def _session(limit: int = 192_000) -> tuple[SQLiteSession, CompactingSession]:
    inner = SQLiteSession("s")
    return inner, CompactingSession(
        inner, Compactor(Policy.default(context_limit=limit), MemoryStore())
    )


def test_a_short_history_comes_back_as_stored() -> None:
    inner, session = _session()
    asyncio.run(session.add_items(_items(3, size=200)))
    assert asyncio.run(session.get_items()) == _items(3, size=200)
    inner.close()


def test_a_cleared_output_is_the_stored_item_with_only_its_output_changed() -> None:
    inner, session = _session(limit=12_000)
    asyncio.run(session.add_items(_items(30)))
    view = asyncio.run(session.get_items())
    assert asyncio.run(inner.get_items()) == _items(30)  # nothing stored was changed or deleted
    assert check(to_canonical(view)[1]) == []
    stored = {i["call_id"]: i for i in _items(30) if i.get("type") == "function_call_output"}
    changed = [
        i for i in view if i.get("type") == "function_call_output" and i != stored[i["call_id"]]
    ]
    assert changed
    for item in changed:
        assert set(item) == set(stored[item["call_id"]])
        assert "full text at" in item["output"] or "Full output:" in item["output"]
    assert asyncio.run(session.get_items(limit=3)) == view[-3:]
    inner.close()


def test_pop_and_clear_act_on_the_inner_session() -> None:
    inner, session = _session()
    asyncio.run(session.add_items(_items(2, size=100)))
    assert asyncio.run(session.pop_item()) == _items(2, size=100)[-1]
    assert len(asyncio.run(inner.get_items())) == 6
    asyncio.run(session.clear_session())
    assert asyncio.run(inner.get_items()) == []
    assert asyncio.run(session.get_items()) == []
    inner.close()


def test_a_stored_item_it_cannot_read_is_refused_naming_where_it_is() -> None:
    inner, session = _session()
    asyncio.run(session.add_items([{"role": "user", "content": "go"}, "hello"]))  # type: ignore[list-item]
    with pytest.raises(InvalidHistory, match="message 1: malformed: expected a Responses item"):
        asyncio.run(session.get_items())
    inner.close()
