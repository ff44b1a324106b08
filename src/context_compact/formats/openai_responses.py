"""OpenAI Responses API input items <-> canonical messages, losslessly.

    system, messages = to_canonical(items)        # items: dicts or SDK output items
    items = from_canonical(messages, system)      # the same items back

Mapping (every field the canonical form does not carry rides under ``"openai"``):

* leading ``system``/``developer`` messages are the caller's system prompt: returned apart,
  first, never summarized. One later in the list becomes a user message holding it as a
  ``passthrough`` block (kept in place, never read as a request).
* a ``user`` message (the easy ``{"role", "content"}`` form or ``type: message``) is one user
  message: ``input_text`` parts are text blocks, ``input_image`` with a URL an image block,
  any other part a passthrough part.
* a run of model items (``reasoning``, assistant ``message``, ``function_call`` and the other
  client-run calls, ``compaction``, server tool calls, ``item_reference``...) is one
  assistant message, in order: an assistant message with one ``output_text`` part is a text
  block, a call with a ``call_id`` (``function_call``, ``custom_tool_call``,
  ``computer_call``, ``local_shell_call``, ``shell_call``, ``apply_patch_call``) a
  ``tool_use`` block whose id is the ``call_id``, everything else a passthrough block. So a
  reasoning item (with its ``encrypted_content``) stays immediately before the call or message
  it belongs to: no pass splits a message or reorders its blocks.
* a run of call outputs (``function_call_output``...) is one user message of ``tool_result``
  blocks: a string output is the result's text (which compaction may persist or clear), a list
  of ``input_text`` parts text blocks; any other output stays whole (a passthrough part).

Calls' ``arguments`` strings are kept verbatim (the parsed ``input`` is for reading only), so
the ids and arguments the API sees again are the ones it sent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..messages import Block, Message, ToolResultBlock, ToolUseBlock, is_image, is_text, is_tool_use
from .base import (
    META,
    ItemDict,
    Unit,
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

NAME = "openai-responses"
CALLS = frozenset(
    {
        "function_call",
        "custom_tool_call",
        "computer_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
    }
)
OUTPUTS = frozenset(f"{kind}_output" for kind in CALLS)
# Items the caller (not the model) adds after a model turn.
CALLER_ITEMS = frozenset({"mcp_approval_response"})
SYSTEM_ROLES = ("system", "developer")
RAW_ARGUMENTS = "_raw_arguments"


def kind(item: ItemDict) -> str | None:
    """The item's type; the easy ``{"role", "content"}`` form is a ``message``."""
    t = item.get("type")
    if t is None and "role" in item:
        return "message"
    return t if isinstance(t, str) else None


def _side(item: ItemDict, index: int) -> str:
    k = kind(item)
    if k is None:
        raise bad_item(index, "a Responses item needs a 'type' (or a 'role' for a message)")
    if k == "message":
        role = item.get("role")
        if role == "assistant":
            return "assistant"
        if role == "user":
            return "user"
        if role in SYSTEM_ROLES:
            return "system"
        raise bad_item(index, f"message with unknown role {role!r}")
    if k in OUTPUTS or k in CALLER_ITEMS:
        return "result"
    return "assistant"


def _call_id(item: ItemDict, index: int) -> str:
    call_id = item.get("call_id")
    if not isinstance(call_id, str):
        raise bad_item(index, f"{kind(item)} without a string call_id")
    return call_id


def parse_arguments(raw: object) -> ItemDict:
    """A call's JSON ``arguments`` as a dict, for reading; anything else kept as text."""
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw) if raw.strip() else {}
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    return {RAW_ARGUMENTS: "" if raw is None else str(raw)}


# -- items -> canonical ------------------------------------------------------------------


def _part_to_block(part: object) -> Block:
    if isinstance(part, dict):
        if part.get("type") in ("input_text", "output_text") and isinstance(part.get("text"), str):
            rest = without(part, "text")
            meta = {} if rest == {"type": "input_text"} else rest
            return with_meta({"type": "text", "text": part["text"]}, meta)
        url = part.get("image_url")
        if part.get("type") == "input_image" and isinstance(url, str):
            return with_meta(
                {"type": "image", "source": image_source(url)}, without(part, "image_url")
            )
    return passthrough(NAME, part=part)


def _user(item: ItemDict) -> Message:
    content: Any = item.get("content")  # checked with the converted list (check())
    meta = without(item, "role", "content")
    if isinstance(content, list):
        content = [_part_to_block(p) for p in content]
    return with_meta({"role": "user", "content": content}, meta)


def _model_block(item: ItemDict, index: int) -> Block:
    k = kind(item)
    if k == "message":
        content = item.get("content")
        rest = without(item, "content")
        if isinstance(content, str):
            return {"type": "text", "text": content, META: {"item": rest}}
        if (
            isinstance(content, list)
            and len(content) == 1
            and isinstance(content[0], dict)
            and content[0].get("type") == "output_text"
            and isinstance(content[0].get("text"), str)
        ):
            part = content[0]
            return {
                "type": "text",
                "text": part["text"],
                META: {"item": rest, "part": without(part, "text")},
            }
        return passthrough(NAME, item)
    if k in CALLS:
        call_id = _call_id(item, index)
        if k == "function_call":
            tool_input = parse_arguments(item.get("arguments"))
            meta = without(item, "call_id", "name")
        elif k == "custom_tool_call":
            tool_input = {"input": item.get("input")}
            meta = without(item, "call_id", "name", "input")
        else:
            tool_input = {}
            meta = without(item, "call_id")
        name = given if isinstance(given := item.get("name"), str) else k
        return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input, META: meta}
    return passthrough(NAME, item)


def _result_block(item: ItemDict, index: int) -> Block:
    if kind(item) in CALLER_ITEMS:
        return passthrough(NAME, item)
    meta = without(item, "call_id", "output")
    output = item.get("output")
    content: Any
    if isinstance(output, str):
        content = output
    elif isinstance(output, list):
        content = [_part_to_block(p) for p in output]
    else:
        # A screenshot, a missing output...: kept whole, never cleared or persisted.
        content = [passthrough(NAME, part=output)]
        meta["_output"] = "value" if "output" in item else "absent"
    block: Block = {
        "type": "tool_result",
        "tool_use_id": _call_id(item, index),
        "content": content,
    }
    return with_meta(block, meta)


def _easy_assistant(item: ItemDict) -> str | None:
    """The text of an assistant message in the plain ``{"role", "content": str}`` form."""
    content = item.get("content")
    if set(item) == {"role", "content"} and item["role"] == "assistant":
        return content if isinstance(content, str) else None
    return None


class ResponsesConverter:
    name = NAME

    def is_system(self, item: ItemDict) -> bool:
        return kind(item) == "message" and item.get("role") in SYSTEM_ROLES

    def units(self, items: list[ItemDict], offset: int = 0) -> list[Unit]:
        out: list[Unit] = []
        i, n = 0, len(items)
        while i < n:
            side = _side(items[i], offset + i)
            if side == "user":
                out.append(Unit(1, _user(items[i])))
                i += 1
                continue
            if side == "system":
                out.append(Unit(1, {"role": "user", "content": [passthrough(NAME, items[i])]}))
                i += 1
                continue
            easy = _easy_assistant(items[i])
            if easy is not None:
                # The plain form chat histories share: a message of its own, a string.
                out.append(Unit(1, {"role": "assistant", "content": easy}))
                i += 1
                continue
            j = i + 1
            while (
                j < n and _side(items[j], offset + j) == side and _easy_assistant(items[j]) is None
            ):
                j += 1
            message: Message
            if side == "assistant":
                message = {
                    "role": "assistant",
                    "content": [_model_block(items[k], offset + k) for k in range(i, j)],
                }
            else:
                message = {
                    "role": "user",
                    "content": [_result_block(items[k], offset + k) for k in range(i, j)],
                }
            out.append(Unit(j - i, message))
            i = j
        return out

    def dump_message(self, message: Message) -> list[ItemDict]:
        if message.get("role") == "assistant":
            return _dump_assistant(message)
        return _dump_user(message)


# -- canonical -> items ------------------------------------------------------------------


def _block_to_part(block: Block) -> object:
    meta = block.get(META) or {}
    if is_text(block):
        return {"type": "input_text", **meta, "text": block.get("text", "")}
    if is_image(block):
        source = block.get("source") or {}
        if source.get("type") == "base64":
            url = f"data:{source.get('media_type')};base64,{source.get('data')}"
        else:
            url = str(source.get("url", ""))
        return {"type": "input_image", "detail": "auto", **meta, "image_url": url}
    if is_passthrough(block, "part"):
        return block["part"]
    raise ValueError(f"{NAME}: a {block.get('type')!r} block has no Responses form")


def _dump_result(block: ToolResultBlock) -> ItemDict:
    meta = dict(block.get(META) or {})
    form = meta.pop("_output", None)
    item: ItemDict = {"type": "function_call_output", **meta}
    item["call_id"] = block.get("tool_use_id")
    content = block.get("content")
    if form == "absent":
        return item
    if form == "value" and isinstance(content, list) and len(content) == 1:
        item["output"] = content[0].get("part")
    elif isinstance(content, list):
        item["output"] = [_block_to_part(b) for b in content]
    else:
        item["output"] = "" if content is None else content
    return item


def _dump_user(message: Message) -> list[ItemDict]:
    return dump_user(message, _dump_result, _block_to_part)


def _dump_assistant(message: Message) -> list[ItemDict]:
    content = message.get("content")
    if not isinstance(content, list):
        return [{"role": "assistant", "content": content}]
    out: list[ItemDict] = []
    for block in content:
        meta = block.get(META) or {}
        if is_text(block):
            text = block.get("text", "")
            if "item" not in meta:
                out.append({"role": "assistant", "content": text})
            elif "part" not in meta:
                out.append({**meta["item"], "content": text})
            else:
                out.append({**meta["item"], "content": [{**meta["part"], "text": text}]})
        elif is_tool_use(block):
            out.append(_dump_call(block, meta))
        elif is_passthrough(block):
            out.append(block["item"])
        else:
            raise ValueError(f"{NAME}: a {block.get('type')!r} block has no Responses form")
    return out


def _dump_call(block: ToolUseBlock, meta: ItemDict) -> ItemDict:
    k = meta.get("type", "function_call")
    item: ItemDict = {"type": k, **meta, "call_id": block.get("id")}
    tool_input = block.get("input")
    if k == "function_call":
        item["name"] = block.get("name")
        if "arguments" not in meta:
            item["arguments"] = _arguments(tool_input)
    elif k == "custom_tool_call":
        item["name"] = block.get("name")
        item["input"] = (tool_input or {}).get("input", "")
    return item


def _arguments(tool_input: object) -> str:
    if isinstance(tool_input, dict) and set(tool_input) == {RAW_ARGUMENTS}:
        return str(tool_input[RAW_ARGUMENTS])
    return json.dumps(tool_input if tool_input is not None else {}, ensure_ascii=False)


CONVERTER = ResponsesConverter()


def to_canonical(items: Sequence[object]) -> tuple[list[ItemDict], list[Message]]:
    """``(system items, canonical messages)`` for a Responses ``input`` list: the leading
    system/developer messages as they are, then the rest converted (the items and the SDK
    objects in it are not modified)."""
    return split_and_convert(CONVERTER, items, "a Responses item")


def from_canonical(
    messages: list[Message], system: Sequence[ItemDict] | None = None
) -> list[ItemDict]:
    """The Responses ``input`` items for canonical ``messages``, after ``system``."""
    return dump_all(CONVERTER, messages, system)


__all__ = ["CONVERTER", "NAME", "ResponsesConverter", "from_canonical", "to_canonical"]
