"""Messages and tools between Anthropic's shape and OpenAI's Chat Completions shape, both ways.

``to_openai`` writes a conversation as Chat Completions messages (tool results as ``tool``
messages, images as ``image_url`` parts); ``from_openai`` reads one back. Arguments that are
not a JSON object survive the round trip under ``RAW_ARGUMENTS``, never dropped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from ..messages import Block, Message

RAW_ARGUMENTS = "_raw_arguments"
LOCAL_PLACEHOLDER_KEY = "sk-local-no-key"

STOP_REASONS: dict[str, str] = {
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "stop": "end_turn",
    "length": "max_tokens",
    "content_filter": "refusal",
}


# -- tools -------------------------------------------------------------------------------


def tools_to_openai(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic tool schemas (``name``, ``description``, ``input_schema``) as functions."""
    converted = []
    for tool in tools:
        function: dict[str, Any] = {"name": tool["name"]}
        if tool.get("description"):
            function["description"] = tool["description"]
        function["parameters"] = tool.get("input_schema") or {"type": "object", "properties": {}}
        converted.append({"type": "function", "function": function})
    return converted


def tools_from_openai(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The inverse of ``tools_to_openai`` for ``{"type": "function"}`` tools."""
    converted = []
    for tool in tools:
        function = tool.get("function") or {}
        schema: dict[str, Any] = {"name": function.get("name")}
        if function.get("description"):
            schema["description"] = function["description"]
        schema["input_schema"] = function.get("parameters") or {"type": "object", "properties": {}}
        converted.append(schema)
    return converted


# -- canonical -> Chat Completions -------------------------------------------------------


def to_openai(messages: list[Message], system: str = "") -> list[dict[str, Any]]:
    """Chat Completions messages for a canonical history (inputs are not modified)."""
    converted: list[dict[str, Any]] = []
    if system:
        converted.append({"role": "system", "content": system})
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role == "assistant":
            converted.append(_assistant_to_openai(content))
        elif role == "user":
            converted.extend(_user_to_openai(content))
        else:
            raise ValueError(f"canonical messages have role 'user' or 'assistant', got {role!r}")
    return converted


def _arguments(tool_input: Any) -> str:
    if (
        isinstance(tool_input, dict)
        and set(tool_input) == {RAW_ARGUMENTS}
        and isinstance(tool_input[RAW_ARGUMENTS], str)
    ):
        return str(tool_input[RAW_ARGUMENTS])
    return json.dumps(tool_input if tool_input is not None else {}, ensure_ascii=False)


def _assistant_to_openai(content: Any) -> dict[str, Any]:
    if isinstance(content, str):
        return {"role": "assistant", "content": content}
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for block in content or []:
        kind = block.get("type")
        if kind == "text":
            parts.append({"type": "text", "text": block.get("text", "")})
        elif kind == "tool_use":
            calls.append(
                {
                    "id": block.get("id"),
                    "type": "function",
                    "function": {
                        "name": block.get("name"),
                        "arguments": _arguments(block.get("input")),
                    },
                }
            )
    message: dict[str, Any] = {
        "role": "assistant",
        "content": parts if parts or not calls else None,
    }
    if calls:
        message["tool_calls"] = calls
    return message


def _image_part(block: Mapping[str, Any]) -> dict[str, Any] | None:
    source = block.get("source") or {}
    if source.get("type") == "base64":
        url = f"data:{source.get('media_type')};base64,{source.get('data')}"
    elif source.get("type") == "url":
        url = source.get("url", "")
    else:
        return None
    return {"type": "image_url", "image_url": {"url": url}}


def _fallback_text(block: Mapping[str, Any]) -> dict[str, Any]:
    # Better the model sees an unsupported block as text than the request fails.
    return {"type": "text", "text": json.dumps(dict(block), ensure_ascii=False, sort_keys=True)}


def _user_part(block: Mapping[str, Any]) -> dict[str, Any]:
    if block.get("type") == "text":
        return {"type": "text", "text": block.get("text", "")}
    if block.get("type") == "image":
        part = _image_part(block)
        if part is not None:
            return part
    return _fallback_text(block)


def _tool_message_content(block: Mapping[str, Any]) -> str | list[dict[str, Any]]:
    content = block.get("content", "")
    prefix = "Error: " if block.get("is_error") else ""
    if isinstance(content, list):
        # Tool messages may carry text parts only.
        parts = [
            {"type": "text", "text": b.get("text", "")}
            if b.get("type") == "text"
            else {"type": "text", "text": f"[{b.get('type')} block omitted]"}
            for b in content
        ]
        if prefix:
            parts.insert(0, {"type": "text", "text": prefix.strip()})
        return parts
    return prefix + str(content)


def _user_to_openai(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"role": "user", "content": content}]
    tool_messages: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in content or []:
        if block.get("type") == "tool_result":
            tool_messages.append(
                {
                    "role": "tool",
                    "tool_call_id": block.get("tool_use_id"),
                    "content": _tool_message_content(block),
                }
            )
        else:
            parts.append(_user_part(block))
    if parts or not tool_messages:
        return [*tool_messages, {"role": "user", "content": parts}]
    return tool_messages


# -- Chat Completions -> canonical -------------------------------------------------------


def from_openai(messages: list[dict[str, Any]]) -> tuple[str | None, list[Message]]:
    """``(system, canonical messages)`` from Chat Completions messages.

    System and developer messages are joined into the system string (``None`` if there is
    none). Consecutive tool messages become one user message of ``tool_result`` blocks.
    """
    system_parts: list[str] = []
    converted: list[Message] = []
    open_results: list[Block] | None = None
    for message in messages:
        role = message.get("role")
        if role in ("system", "developer"):
            system_parts.append(_plain_text(message.get("content")))
            continue
        if role == "tool":
            block = cast(  # the caller's id, unchecked here as before
                Block,
                {
                    "type": "tool_result",
                    "tool_use_id": message.get("tool_call_id"),
                    "content": _tool_result_content(message.get("content")),
                },
            )
            if open_results is None:
                open_results = [block]
                converted.append({"role": "user", "content": open_results})
            else:
                open_results.append(block)
            continue
        if role == "user":
            content = _user_content(message.get("content"))
            if open_results is not None:
                if isinstance(content, list):
                    open_results.extend(content)
                elif content:
                    open_results.append({"type": "text", "text": content})
            else:
                converted.append({"role": "user", "content": content})
        elif role == "assistant":
            converted.append(_assistant_from_openai(message))
        else:
            raise ValueError(f"unsupported Chat Completions role {role!r}")
        open_results = None
    return ("\n\n".join(system_parts) if system_parts else None), converted


def _plain_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    return "" if content is None else str(content)


def _tool_result_content(content: Any) -> str | list[Block]:
    if isinstance(content, list):
        return [{"type": "text", "text": _part_text(p)} for p in content]
    return "" if content is None else str(content)


def _part_text(part: Mapping[str, Any]) -> str:
    if part.get("type") == "refusal":
        return str(part.get("refusal", ""))
    return str(part.get("text", ""))


def _image_block(url: str) -> Block:
    if url.startswith("data:") and ";base64," in url:
        header, data = url[len("data:") :].split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": header, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _user_content(content: Any) -> str | list[Block]:
    if not isinstance(content, list):
        return "" if content is None else str(content)
    blocks: list[Block] = []
    for part in content:
        if part.get("type") == "image_url":
            blocks.append(_image_block(str((part.get("image_url") or {}).get("url", ""))))
        elif part.get("type") == "text":
            blocks.append({"type": "text", "text": str(part.get("text", ""))})
        else:
            blocks.append({"type": "text", "text": json.dumps(part, ensure_ascii=False)})
    return blocks


def _parse_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        return {RAW_ARGUMENTS: "" if raw is None else str(raw)}
    if not raw.strip():
        # Some servers send "" for a call without arguments.
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {RAW_ARGUMENTS: raw}
    return parsed if isinstance(parsed, dict) else {RAW_ARGUMENTS: raw}


def _tool_use(call: Mapping[str, Any]) -> Block:
    if call.get("type") == "custom":
        custom = call.get("custom") or {}
        name, tool_input = custom.get("name"), {RAW_ARGUMENTS: str(custom.get("input", ""))}
    else:
        function = call.get("function") or {}
        name, tool_input = function.get("name"), _parse_arguments(function.get("arguments"))
    # The model's id and name, unchecked: a reply is taken as the API sent it.
    return cast(
        Block, {"type": "tool_use", "id": call.get("id"), "name": name, "input": tool_input}
    )


def _assistant_from_openai(message: Mapping[str, Any], *, always_blocks: bool = False) -> Message:
    content = message.get("content")
    tool_uses = [_tool_use(call) for call in message.get("tool_calls") or []]
    if isinstance(content, str) and not tool_uses and not always_blocks:
        return {"role": "assistant", "content": content}
    blocks: list[Block] = []
    if isinstance(content, list):
        blocks = [{"type": "text", "text": _part_text(p)} for p in content]
    elif isinstance(content, str) and content:
        blocks = [{"type": "text", "text": content}]
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal and not blocks:
        blocks = [{"type": "text", "text": refusal}]
    return {"role": "assistant", "content": blocks + tool_uses}


# -- replies -----------------------------------------------------------------------------


def _as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, Mapping):
        return dict(obj)
    dumped: dict[str, Any] = obj.model_dump(mode="json")
    return dumped


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
