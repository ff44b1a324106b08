"""An OpenAI Agents SDK session that keeps everything and hands the runner a compacted view.

    from agents import Runner, SQLiteSession
    from context_compact.integrations.openai_agents import CompactingSession

    session = CompactingSession(SQLiteSession("user-42", "chats.db"), compactor)
    result = await Runner.run(agent, "next question", session=session)

The runner reads a session's history once, when a run starts (``get_items``), and adds what
the run produced (``add_items``). ``CompactingSession`` writes every item to the inner session
unchanged and never deletes one (the SDK's ``OpenAIResponsesCompactionSession`` replaces the
stored history with its compacted form); ``get_items`` returns the compactor's view of the
stored items: large outputs persisted with a preview, old outputs cleared, old turns
summarized, each naming the file that holds its full copy. ``inner.get_items()`` is the
whole conversation; ``pop_item`` and ``clear_session`` act on it. A run is compacted when it
starts, not between the model calls of one run (the runner keeps those in memory).

Items are Responses input items (``TResponseInputItem``). Runs of model items (assistant
messages, ``function_call`` s, reasoning...) become one assistant message, runs of
``function_call_output`` s one user message of ``tool_result`` blocks, a user message one
user message; a ``function_call`` and its output stay together or leave together. Items the
compactor left alone come back as the stored items themselves; an output it replaced is the
stored item with a new ``output``; a summary is a new user message.
"""

from __future__ import annotations

import json
from typing import Any

from ..compactor import Compactor
from ..invariants import InvalidHistory, Violation
from ..messages import Block, Message, block_type, blocks
from ._bridge import Converted, Units, origins_of, results_in, text_of

# The part of OpenAI Responses conversion this adapter needs (see the module docstring).
# TODO(issue 11): use ``context_compact.formats.openai_responses`` once it is on main.
CALLS = frozenset({"function_call", "custom_tool_call"})
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})


def _kind(item: dict[str, Any]) -> str:
    kind = item.get("type")
    if kind is None and "role" in item:
        return "message"
    return str(kind)


def _side(item: Any, index: int) -> str:
    if not isinstance(item, dict):
        detail = f"expected a Responses input item (a dict), got {type(item).__name__}"
        raise InvalidHistory([Violation(index, "malformed", detail)], "session items")
    kind = _kind(item)
    if kind in OUTPUTS:
        return "outputs"
    if kind == "message" and item.get("role") != "assistant":
        return "user"
    return "model"


def _units(items: list[Any]) -> list[tuple[Any, ...]]:
    units: list[tuple[Any, ...]] = []
    sides: list[str] = []
    for i, item in enumerate(items):
        side = _side(item, i)
        if sides and side == sides[-1] and side != "user":
            units[-1] = (*units[-1], item)
        else:
            units.append((item,))
            sides.append(side)
    return units


def _parts_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        str(p.get("text", "")) for p in content or [] if isinstance(p, dict) and "text" in p
    )


def _opaque(item: dict[str, Any]) -> Block:
    return {"type": "text", "text": json.dumps(item, sort_keys=True, default=str)}


def _model_block(item: dict[str, Any]) -> Block:
    kind = _kind(item)
    if kind in CALLS:
        raw = item.get("arguments", item.get("input", ""))
        try:
            parsed = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            parsed = None
        tool_input = parsed if isinstance(parsed, dict) else {"input": raw}
        return {
            "type": "tool_use",
            "id": item["call_id"],
            "name": item["name"],
            "input": tool_input,
        }
    if kind == "message":
        return {"type": "text", "text": _parts_text(item.get("content"))}
    return _opaque(item)


def _output_block(item: dict[str, Any]) -> Block:
    output = item.get("output", "")
    text = output if isinstance(output, str) else json.dumps(output, sort_keys=True)
    return {"type": "tool_result", "tool_use_id": item["call_id"], "content": text}


def to_dict(unit: tuple[Any, ...]) -> Message:
    """One unit of stored items as a canonical message."""
    first = unit[0]
    side = _side(first, 0)
    if side == "outputs":
        return {"role": "user", "content": [_output_block(i) for i in unit]}
    if side == "user":
        content = first.get("content")
        if isinstance(content, str):
            return {"role": "user", "content": content}
        return {
            "role": "user",
            "content": [
                {"type": "text", "text": str(p["text"])}
                if isinstance(p, dict) and p.get("type") == "input_text"
                else _opaque(p)
                for p in content or []
            ],
        }
    return {"role": "assistant", "content": [_model_block(i) for i in unit]}


def restore(view: list[Message], converted: list[Converted]) -> list[Any]:
    """The view as Responses input items: stored items where unchanged."""
    origins = origins_of(converted)
    for item in converted:
        if _side(item.unit[0], 0) == "outputs":
            for stored, block in zip(item.unit, blocks(item.message), strict=True):
                origins.add_result(block, stored)
    out: list[Any] = []
    for message in view:
        origin = origins.take(message)
        if origin is not None:
            out.extend(origin)
        elif message["role"] == "assistant":
            out.extend(_new_model_items(message))
        else:
            out.extend(_new_user_items(message, origins))
    return out


def _new_user_items(message: Message, origins: Any) -> list[Any]:
    results = results_in(message)
    if not results:
        return [{"role": "user", "content": text_of(message["content"])}]
    out = []
    for block in results:
        known = origins.result(block["tool_use_id"])
        content = block.get("content", "")
        text = content if isinstance(content, str) else text_of(content)
        if known is None:
            item = {"type": "function_call_output", "call_id": block["tool_use_id"]}
            out.append({**item, "output": text})
        else:
            out.append(known[1] if known[0] == block else {**known[1], "output": text})
    return out


def _new_model_items(message: Message) -> list[Any]:
    content = message["content"]
    if isinstance(content, str):
        return [{"role": "assistant", "content": content}]
    out: list[Any] = []
    for block in blocks(message):
        if block_type(block) == "tool_use":
            arguments = json.dumps(block.get("input", {}))
            call = {"type": "function_call", "call_id": block["id"], "name": block["name"]}
            out.append({**call, "arguments": arguments})
        else:
            out.append({"role": "assistant", "content": str(block.get("text", ""))})
    return out


def latest_request(items: list[Any]) -> str:
    for item in reversed(items):
        if _side(item, 0) == "user":
            return text_of(to_dict((item,))["content"])
    return ""


class CompactingSession:
    """A ``Session`` over ``inner``: everything stored there, a compacted view returned."""

    def __init__(self, inner: Any, compactor: Compactor) -> None:
        self.inner = inner
        self.compactor = compactor
        self.session_id: str = inner.session_id
        self.session_settings = getattr(inner, "session_settings", None)
        self._units = Units()

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The compactor's view of every stored item; with ``limit``, its latest items."""
        items = list(await self.inner.get_items())
        if not items:
            return []
        converted = self._units.convert(_units(items), to_dict)
        dicts = [c.message for c in converted]
        view = restore(await self.compactor.aprepare(dicts, latest_request(items)), converted)
        return view if limit is None else view[-limit:] if limit > 0 else []

    async def add_items(self, items: list[Any]) -> None:
        await self.inner.add_items(items)

    async def pop_item(self) -> Any:
        return await self.inner.pop_item()

    async def clear_session(self) -> None:
        await self.inner.clear_session()


__all__ = ["CompactingSession", "latest_request", "restore", "to_dict"]
