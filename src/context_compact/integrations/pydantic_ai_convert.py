"""pydantic-ai's messages as canonical ones and back: the conversion of ``pydantic_ai.py``.

Conversion (one ``ModelMessage`` is one canonical message): a ``ModelRequest`` is a user
message whose ``ToolReturnPart`` s (and legacy ``RetryPromptPart`` s bound to a tool call)
are ``tool_result`` blocks, ``is_error`` unless the outcome was a success; a ``ModelResponse``
is an assistant message whose ``ToolCallPart`` s are ``tool_use`` blocks and ``ThinkingPart``
s thinking blocks; text parts (user and system prompts, text) are text blocks; any other part
(files, provider-side tool calls, deltas) is a text block of its JSON form, which only the
compactor reads. Tool calls and their returns stay together or leave together. Back: every
message the compactor left alone is the original object; a request whose result it replaced
is the original request with that part's content replaced; a summary is a new request of
one ``UserPromptPart``. The last response's ``usage`` calibrates the budget and each
request's ``instructions`` count into it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from ..errors import MissingExtra

try:
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ThinkingPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_core import to_jsonable_python
except ImportError as error:  # pragma: no cover - the message is the point
    raise MissingExtra(
        "context_compact.integrations.pydantic_ai", "pydantic-ai", "pydantic-ai", "pydantic-ai-slim"
    ) from error

from ..invariants import InvalidHistory, Violation
from ..messages import Block, Message, ToolResultBlock, block_type, blocks, is_tool_use
from ._bridge import Converted, origins_of, results_in


def _opaque(value: Any) -> Block:
    return {"type": "text", "text": json.dumps(to_jsonable_python(value), sort_keys=True)}


def _result(part: Any) -> ToolResultBlock | None:
    """The tool_result block of a request part bound to a tool call, else None."""
    if isinstance(part, ToolReturnPart):
        block: ToolResultBlock = {
            "type": "tool_result",
            "tool_use_id": part.tool_call_id,
            "content": part.model_response_str(),
        }
        if getattr(part, "outcome", "success") != "success":
            block["is_error"] = True
        return block
    if isinstance(part, RetryPromptPart) and part.tool_name is not None:
        return {
            "type": "tool_result",
            "tool_use_id": part.tool_call_id,
            "content": part.model_response(),
            "is_error": True,
        }
    return None


def _request_blocks(part: Any) -> list[Block]:
    result = _result(part)
    if result is not None:
        return [result]
    if isinstance(part, SystemPromptPart):
        return [{"type": "text", "text": part.content}]
    if isinstance(part, UserPromptPart):
        items = [part.content] if isinstance(part.content, str) else part.content
        return [{"type": "text", "text": i} if isinstance(i, str) else _opaque(i) for i in items]
    if isinstance(part, RetryPromptPart):
        return [{"type": "text", "text": part.model_response()}]
    return [_opaque(part)]


def _response_block(part: Any) -> Block:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.content}
    if isinstance(part, ThinkingPart):
        return {"type": "thinking", "thinking": part.content, "signature": part.signature or ""}
    if isinstance(part, ToolCallPart):
        return {
            "type": "tool_use",
            "id": part.tool_call_id,
            "name": part.tool_name,
            "input": part.args_as_dict(),
        }
    return _opaque(part)


def to_dict(unit: tuple[Any, ...]) -> Message:
    """One ``ModelRequest`` or ``ModelResponse`` (with its parts list) as a canonical dict."""
    message = unit[0]
    if isinstance(message, ModelResponse):
        return {"role": "assistant", "content": [_response_block(p) for p in message.parts]}
    return {"role": "user", "content": [b for p in message.parts for b in _request_blocks(p)]}


def units_of(messages: Sequence[Any]) -> list[tuple[Any, ...]]:
    for i, message in enumerate(messages):
        if not isinstance(message, (ModelRequest, ModelResponse)):
            detail = f"expected a ModelRequest or ModelResponse, got {type(message).__name__}"
            raise InvalidHistory([Violation(i, "malformed", detail)], "pydantic-ai messages")
    # The parts list is part of the unit: pydantic-ai reassigns ``parts`` to add to a request.
    return [(m, m.parts) for m in messages]


def restore(view: list[Message], converted: list[Converted]) -> list[ModelMessage]:
    """The view as pydantic-ai messages: originals where unchanged (see the module docstring)."""
    origins = origins_of(converted)
    for item in converted:
        message = item.unit[0]
        if isinstance(message, ModelRequest):
            for index, part in enumerate(message.parts):
                block = _result(part)
                if block is not None:
                    origins.add_result(block, (message, index))
    out: list[ModelMessage] = []
    for message in view:
        origin = origins.take(message)
        if origin is not None:
            out.append(origin[0])
        elif message["role"] == "assistant":
            out.append(_new_response(message))
        else:
            out.append(_changed_request(message, origins))
    return out


def _changed_request(message: Message, origins: Any) -> ModelRequest:
    """A request whose tool results the compactor replaced: the original, those parts' content
    replaced; a message the compactor wrote (a summary): a new request."""
    changed: dict[int, str] = {}
    original: ModelRequest | None = None
    for block in results_in(message):
        known = origins.result(block["tool_use_id"])
        if known is not None and known[0] != block:
            original, index = known[1]
            content = block.get("content", "")
            changed[index] = content if isinstance(content, str) else json.dumps(content)
    if original is None:
        content = message["content"]
        text = (
            content
            if isinstance(content, str)
            else "\n".join(
                str(b.get("text", "")) for b in blocks(message) if block_type(b) == "text"
            )
        )
        return ModelRequest(parts=[UserPromptPart(text)])
    parts: list[Any] = list(original.parts)
    for i, content in changed.items():
        parts[i] = dataclasses.replace(parts[i], content=content)
    return dataclasses.replace(original, parts=parts)


def _new_response(message: Message) -> ModelResponse:
    content = message["content"]
    if isinstance(content, str):
        return ModelResponse(parts=[TextPart(content)])
    parts: list[Any] = []
    for block in blocks(message):
        if is_tool_use(block):
            parts.append(ToolCallPart(block["name"], block.get("input"), block["id"]))
        else:
            parts.append(TextPart(str(block.get("text", ""))))
    return ModelResponse(parts=parts)


def latest_request(messages: Sequence[ModelMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in reversed(message.parts):
                if isinstance(part, UserPromptPart):
                    content = part.content
                    if isinstance(content, str):
                        return content
                    return "\n".join(c for c in content if isinstance(c, str))
    return ""


__all__ = ["latest_request", "restore", "to_dict", "units_of"]
