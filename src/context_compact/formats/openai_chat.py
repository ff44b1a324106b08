"""OpenAI Chat Completions messages <-> canonical messages, losslessly.

    system, messages = to_canonical(history)      # dicts or ChatCompletionMessage objects
    history = from_canonical(messages, system)    # the same messages back

Mapping (fields the canonical form does not carry ride under ``"openai"``):

* leading ``system``/``developer`` messages are the caller's system prompt: returned apart,
  first, never summarized; a later one becomes a user message holding it as a ``passthrough``
  block, in place.
* ``user``: a string stays a string; ``text`` parts are text blocks, ``image_url`` parts image
  blocks, any other part (audio, file) a passthrough part.
* ``assistant``: text, then one ``tool_use`` block per ``tool_calls`` entry (id = the call's id,
  ``arguments`` kept verbatim); ``refusal``, ``audio``, ``annotations``, ``name`` and the
  form of ``content`` (a string, parts, ``None`` or absent) ride along. An assistant message
  that is only a string stays a string.
* a run of ``tool`` messages is one user message of ``tool_result`` blocks (in order), and is
  never merged with the user message after it: a list converted in two pieces gives the same
  messages as converted whole.
* legacy ``function`` messages are passthrough blocks of a user message.

This is the converter for callers' histories; ``providers.openai_chat`` is the wire adapter
of the CLI's OpenAI provider (canonical -> request), which drops what it cannot send.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..messages import Block, Message, ToolResultBlock, ToolUseBlock, is_image, is_text, is_tool_use
from .base import (
    META,
    ItemDict,
    Unit,
    as_item,
    bad_item,
    dump_all,
    dump_user,
    image_source,
    is_passthrough,
    passthrough,
    split_and_convert,
    with_meta,
    without,
)
from .openai_responses import parse_arguments

NAME = "openai-chat"
SYSTEM_ROLES = ("system", "developer")
USER_SIDE = ("tool", "function")


def _part_to_block(part: object) -> Block:
    if isinstance(part, dict):
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            return with_meta({"type": "text", "text": part["text"]}, without(part, "type", "text"))
        image = part.get("image_url")
        if part.get("type") == "image_url" and isinstance(image, dict):
            url = image.get("url")
            if isinstance(url, str):
                meta = without(part, "type", "image_url")
                if len(image) > 1:
                    meta["image_url"] = without(image, "url")
                return with_meta({"type": "image", "source": image_source(url)}, meta)
    return passthrough(NAME, part=part)


def _block_to_part(block: Block) -> object:
    meta = dict(block.get(META) or {})
    if is_text(block):
        return {"type": "text", **meta, "text": block.get("text", "")}
    if is_image(block):
        source = block.get("source") or {}
        if source.get("type") == "base64":
            url = f"data:{source.get('media_type')};base64,{source.get('data')}"
        else:
            url = str(source.get("url", ""))
        image = {**meta.pop("image_url", {}), "url": url}
        return {"type": "image_url", **meta, "image_url": image}
    if is_passthrough(block, "part"):
        return block["part"]
    raise ValueError(f"{NAME}: a {block.get('type')!r} block has no Chat Completions form")


def _user(message: ItemDict) -> Message:
    content: Any = message.get("content")  # checked with the converted list (check())
    if isinstance(content, list):
        content = [_part_to_block(p) for p in content]
    return with_meta({"role": "user", "content": content}, without(message, "role", "content"))


def _assistant(message: ItemDict, index: int) -> Message:
    content = message.get("content")
    calls = message.get("tool_calls") or []
    if not isinstance(calls, (list, tuple)):
        raise bad_item(index, f"tool_calls must be a list, got {type(calls).__name__}")
    meta = without(message, "role", "content", "tool_calls")
    if isinstance(content, str) and not calls and not meta:
        return {"role": "assistant", "content": content}
    if "content" not in message:
        meta["_content"] = "absent"
    elif content is None:
        meta["_content"] = "none"
    elif isinstance(content, str):
        meta["_content"] = "str"
    if "tool_calls" in message:
        meta["_tool_calls"] = "none" if message["tool_calls"] is None else "list"
    blocks: list[Block] = []
    if isinstance(content, str):
        blocks.append({"type": "text", "text": content})
    elif isinstance(content, list):
        blocks.extend(_part_to_block(p) for p in content)
    for call in calls:
        blocks.append(_tool_use(as_item(call, index, "a tool call"), index))
    return with_meta({"role": "assistant", "content": blocks}, meta)


def _field(call: ItemDict, key: str, index: int) -> Mapping[str, object]:
    """A call's ``function`` or ``custom`` object (empty when absent)."""
    value = call.get(key) or {}
    if not isinstance(value, dict):
        raise bad_item(index, f"a tool call's {key} must be an object, got {type(value).__name__}")
    return value


def _tool_use(call: ItemDict, index: int) -> Block:
    call_id = call.get("id")
    if not isinstance(call_id, str):
        raise bad_item(index, "a tool call without a string id")
    name: Any  # the caller's, checked with the converted list (check())
    if call.get("type") == "custom":
        custom = _field(call, "custom", index)
        name, tool_input = custom.get("name"), {"input": custom.get("input")}
    else:
        function = _field(call, "function", index)
        name, tool_input = function.get("name"), parse_arguments(function.get("arguments"))
    block: Block = {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}
    return with_meta(block, without(call, "id"))


def _tool_result(message: ItemDict, index: int) -> Block:
    if message.get("role") == "function":
        return passthrough(NAME, message)
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str):
        raise bad_item(index, "a tool message without a string tool_call_id")
    content = message.get("content")
    if isinstance(content, list):
        content = [_part_to_block(p) for p in content]
    elif not isinstance(content, str):
        raise bad_item(index, f"tool message content must be a str or a list, got {content!r}")
    block: Block = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    return with_meta(block, without(message, "role", "tool_call_id", "content"))


class ChatConverter:
    name = NAME

    def is_system(self, item: ItemDict) -> bool:
        return item.get("role") in SYSTEM_ROLES

    def units(self, items: list[ItemDict], offset: int = 0) -> list[Unit]:
        out: list[Unit] = []
        i, n = 0, len(items)
        while i < n:
            role = items[i].get("role")
            if role in USER_SIDE:
                j = i + 1
                while j < n and items[j].get("role") in USER_SIDE:
                    j += 1
                results = [_tool_result(items[k], offset + k) for k in range(i, j)]
                out.append(Unit(j - i, {"role": "user", "content": results}))
                i = j
                continue
            message: Message
            if role == "user":
                message = _user(items[i])
            elif role == "assistant":
                message = _assistant(items[i], offset + i)
            elif role in SYSTEM_ROLES:
                message = {"role": "user", "content": [passthrough(NAME, items[i])]}
            else:
                raise bad_item(offset + i, f"unknown role {role!r}")
            out.append(Unit(1, message))
            i += 1
        return out

    def dump_message(self, message: Message) -> list[ItemDict]:
        if message.get("role") == "assistant":
            return [_dump_assistant(message)]
        return _dump_user(message)


def _dump_user(message: Message) -> list[ItemDict]:
    return dump_user(message, _dump_result, _block_to_part)


def _dump_result(block: ToolResultBlock) -> ItemDict:
    content = block.get("content")
    parts = [_block_to_part(b) for b in content] if isinstance(content, list) else content
    meta = block.get(META) or {}
    return {"role": "tool", **meta, "tool_call_id": block.get("tool_use_id"), "content": parts}


def _dump_assistant(message: Message) -> ItemDict:
    content = message.get("content")
    if not isinstance(content, list):
        return {"role": "assistant", "content": content}
    meta = dict(message.get(META) or {})
    form = meta.pop("_content", "list")
    calls_form = meta.pop("_tool_calls", None)
    parts = [b for b in content if not is_tool_use(b)]
    calls = [_dump_call(b) for b in content if is_tool_use(b)]
    out: ItemDict = {"role": "assistant", **meta}
    if form == "str":
        out["content"] = "".join(str(b.get("text", "")) for b in parts)
    elif form == "none":
        out["content"] = None
    elif form == "list":
        out["content"] = [_block_to_part(b) for b in parts]
    if calls or calls_form == "list":
        out["tool_calls"] = calls
    elif calls_form == "none":
        out["tool_calls"] = None
    return out


def _dump_call(block: ToolUseBlock) -> ItemDict:
    meta = block.get(META) or {}
    call: ItemDict = {"type": "function", **meta, "id": block.get("id")}
    tool_input = block.get("input") or {}
    if call["type"] == "custom":
        custom = {**meta.get("custom", {}), "name": block.get("name")}
        call["custom"] = {**custom, "input": tool_input.get("input", "")}
    elif "function" not in meta:
        call["function"] = {"name": block.get("name"), "arguments": json.dumps(tool_input)}
    return call


CONVERTER = ChatConverter()


def to_canonical(messages: Sequence[object]) -> tuple[list[ItemDict], list[Message]]:
    """``(system messages, canonical messages)`` for a Chat Completions history: the leading
    system/developer messages as they are, then the rest converted (nothing is modified)."""
    return split_and_convert(CONVERTER, messages, "a chat message")


def from_canonical(
    messages: list[Message], system: Sequence[ItemDict] | None = None
) -> list[ItemDict]:
    """Chat Completions messages for canonical ``messages``, after ``system``."""
    return dump_all(CONVERTER, messages, system)


__all__ = ["CONVERTER", "NAME", "ChatConverter", "from_canonical", "to_canonical"]
