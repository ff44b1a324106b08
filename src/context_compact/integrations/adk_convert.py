"""google.genai ``Content`` / ``Part`` as canonical messages and back: the conversion of ``adk.py``.

One ``Content`` is one canonical message: role ``model`` is ``assistant``, any other role
``user``. Parts become blocks: text is ``text``; a thought (``part.thought``) is ``thinking``
(its ``thought_signature`` base64 as the signature); ``function_call`` is ``tool_use`` (its id,
name and ``args``); ``function_response`` is ``tool_result`` whose content is the tool's text
(ADK wraps a tool's return value as ``{"result": value}``: the value, as text when it is not a
string), any other response its JSON; ``inline_data`` is an image or document block; any other
part (file data, code execution, ...) a text block of its JSON, which only the compactor reads.
A call without an id (ADK gives every call one; a hand-built history may not) is named
``<name>-<n>`` for the n-th such call of that name, and the n-th id-less response of that name
answers it. Contents without parts carry nothing and are left out.

Back (``restore``): a message the compactor left alone is the original ``Content`` object; a
message it changed is rebuilt from its original (found by a tool id in it) with each block
that is still equal mapped to its original ``Part`` (thought signatures, video metadata and
every other field unchanged), a result whose content it replaced as that ``Part`` with
``response={"result": text}``, a call whose input it cleared as that ``Part`` with the new
``args``; a message it wrote itself (a summary) is a new ``Content``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from ..errors import MissingExtra

try:
    from google.genai import types
except ImportError as error:  # pragma: no cover - the message is the point
    raise MissingExtra(
        "context_compact.integrations.adk", "Google ADK", "adk", "google-adk"
    ) from error

from ..messages import (
    Block,
    ImageBlock,
    Message,
    block_type,
    blocks,
    is_result,
    is_tool_use,
)
from ._bridge import Converted, Units, origins_of, text_of

MODEL = "model"


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _dumped(part: Any) -> dict[str, Any]:
    return dict(part.model_dump(mode="json", exclude_none=True))


def _response_text(response: Any) -> str:
    """A function response's content: the ``result`` ADK wrapped, else the whole response."""
    if isinstance(response, dict) and set(response) == {"result"}:
        value = response["result"]
        return value if isinstance(value, str) else _json(value)
    return _json(response)


class Ids:
    """Tool ids for calls and responses: their own, or ``<name>-<n>`` for id-less ones."""

    def __init__(self) -> None:
        self._calls: dict[str, int] = {}
        self._responses: dict[str, int] = {}

    def call(self, call: Any) -> str:
        return call.id or self._next(self._calls, call.name or "call")

    def response(self, response: Any) -> str:
        return response.id or self._next(self._responses, response.name or "call")

    @staticmethod
    def _next(seen: dict[str, int], name: str) -> str:
        seen[name] = seen.get(name, 0) + 1
        return f"{name}-{seen[name]}"


def to_block(part: Any, ids: Ids, role: str) -> Block:
    """One ``Part`` as a canonical block (see the module docstring)."""
    if part.function_call is not None:
        call = part.function_call
        return {
            "type": "tool_use",
            "id": ids.call(call),
            "name": call.name or "",
            "input": dict(call.args or {}),
        }
    if part.function_response is not None:
        response = part.function_response
        return {
            "type": "tool_result",
            "tool_use_id": ids.response(response),
            "content": _response_text(response.response),
        }
    if part.thought and role == MODEL:
        signature = part.thought_signature
        return {
            "type": "thinking",
            "thinking": part.text or "",
            "signature": base64.b64encode(signature).decode() if signature else "",
        }
    if part.text is not None and not part.thought:
        return {"type": "text", "text": part.text}
    if part.inline_data is not None and part.inline_data.data is not None:
        mime = part.inline_data.mime_type or "application/octet-stream"
        data = base64.b64encode(part.inline_data.data).decode()
        source = {"type": "base64", "media_type": mime, "data": data}
        if mime.startswith("image/"):
            image: ImageBlock = {"type": "image", "source": source}
            return image
        return {"type": "document", "source": source}
    return {"type": "text", "text": _json(_dumped(part))}


def units_of(contents: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The contents that carry parts, one unit each."""
    return [(content,) for content in contents if content.parts]


class Converter:
    """Contents to canonical dicts for one request, each part's block remembered for
    ``restore``."""

    def __init__(self) -> None:
        self.ids = Ids()
        self.parts: dict[int, list[tuple[Block, Any]]] = {}

    def to_dict(self, unit: tuple[Any, ...]) -> Message:
        content = unit[0]
        role = MODEL if content.role == MODEL else "user"
        pairs = [(to_block(part, self.ids, role), part) for part in content.parts]
        self.parts[id(content)] = pairs
        return {
            "role": "assistant" if role == MODEL else "user",
            "content": [block for block, _ in pairs],
        }

    def convert(self, contents: Sequence[Any]) -> list[Converted]:
        return Units().convert(units_of(contents), self.to_dict)


def restore(view: list[Message], converted: list[Converted], converter: Converter) -> list[Any]:
    """The view as ``Content`` objects: originals where unchanged (see the module docstring)."""
    origins = origins_of(converted)
    home: dict[str, Any] = {}  # tool id -> the Content holding it
    tools: dict[tuple[str | None, str], tuple[Block, Any]] = {}  # (type, id) -> block, Part
    for item in converted:
        content = item.unit[0]
        for block, part in converter.parts[id(content)]:
            tool = _tool_id(block)
            if tool is not None:
                home.setdefault(tool, content)
                tools[(block_type(block), tool)] = (block, part)
    out: list[Any] = []
    for message in view:
        origin = origins.take(message)
        if origin is not None:
            out.append(origin[0])
            continue
        original = next(
            (home[t] for t in map(_tool_id, blocks(message)) if t is not None and t in home), None
        )
        out.append(_rebuilt(message, original, converter, tools))
    return out


def _tool_id(block: Block) -> str | None:
    if is_tool_use(block):
        return str(block.get("id"))
    if is_result(block):
        return str(block.get("tool_use_id"))
    return None


def _rebuilt(
    message: Message,
    original: Any,
    converter: Converter,
    tools: dict[tuple[str | None, str], tuple[Block, Any]],
) -> Any:
    role = MODEL if message["role"] == "assistant" else "user"
    if isinstance(message["content"], str):
        return types.Content(role=role, parts=[types.Part(text=message["content"])])
    unused = list(converter.parts[id(original)]) if original is not None else []
    parts = []
    for block in blocks(message):
        same = next((i for i, (b, _) in enumerate(unused) if b == block), None)
        if same is not None:
            parts.append(unused.pop(same)[1])
            continue
        tool = _tool_id(block)
        known = tools.get((block_type(block), tool)) if tool is not None else None
        parts.append(_new_part(block, known[1] if known is not None else None))
    return types.Content(role=role, parts=parts)


def _new_part(block: Block, original: Any) -> Any:
    """A part for a block the compactor changed (from its original part) or wrote."""
    kind = block_type(block)
    if is_result(block):
        text = text_of(block.get("content", ""))
        if original is not None:
            response = original.function_response.model_copy(update={"response": {"result": text}})
            return original.model_copy(update={"function_response": response})
        return types.Part(
            function_response=types.FunctionResponse(
                id=block["tool_use_id"], name="tool", response={"result": text}
            )
        )
    if is_tool_use(block):
        args = dict(block.get("input") or {})
        if original is not None:
            call = original.function_call.model_copy(update={"args": args})
            return original.model_copy(update={"function_call": call})
        return types.Part(
            function_call=types.FunctionCall(id=block["id"], name=block["name"], args=args)
        )
    if kind == "thinking":
        signature = str(block.get("signature") or "")
        return types.Part(
            text=str(block.get("thinking", "")),
            thought=True,
            thought_signature=base64.b64decode(signature) if signature else None,
        )
    return types.Part(text=text_of([block]) if kind == "text" else _json(block))


def latest_request(contents: Sequence[Any]) -> str:
    """The text of the newest user content that is not tool output."""
    for content in reversed(contents):
        parts = content.parts or []
        if content.role != MODEL and not any(p.function_response for p in parts):
            text = "\n".join(p.text for p in parts if p.text and not p.thought)
            if text:
                return text
    return ""


__all__ = ["Converter", "latest_request", "restore", "to_block", "units_of"]
