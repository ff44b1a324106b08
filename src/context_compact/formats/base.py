"""What every format converter shares: units, passthrough blocks, item errors.

A converter turns a caller's list (Anthropic messages, OpenAI chat messages, OpenAI Responses
items, as dicts or as the SDK objects the API returned) into the canonical history the
engines work on (Anthropic-shaped dicts) and back. It works in *units*: one canonical message
and the run of caller items it came from. Units never depend on what comes after them, except
that a run of items of one side grows while items of that side follow; so a list converted
in two pieces gives the same messages as converted whole, up to where the first piece ended.

Invariants every converter keeps:

* ``from_canonical(to_canonical(items))`` gives the items back, equal as dicts (an SDK object
  comes back as the dict the API sent: ``messages.plain``).
* Every canonical message dumps on its own (``dump_message``), so a view that a compaction
  changed converts message by message.
* What the canonical form cannot hold rides along: fields of an item the canonical blocks do
  not carry are kept under the block's or message's ``"openai"`` key, and items or content
  parts with no canonical counterpart (encrypted reasoning, ``compaction`` items, a
  mid-conversation developer message, a refusal part) become ``passthrough`` blocks that no
  pass reads, clears or rewrites (they are sized, summarized as JSON, and archived whole).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol, TypeGuard, overload

from ..invariants import InvalidHistory, Violation
from ..messages import (
    FORMAT_META,
    PASSTHROUGH,
    Block,
    Message,
    PassthroughBlock,
    ToolResultBlock,
    is_result,
    plain,
)

META: Final = FORMAT_META

ItemDict = dict[str, object]
"""A caller's item as a plain dict (``as_item``: an SDK object as the dict the API sent).
Its values are the caller's: each is read by narrowing (``isinstance``), and a value the
canonical form does not read is carried untouched."""


@dataclass(frozen=True)
class Unit:
    """One canonical message and how many caller items it came from."""

    count: int
    message: Message


class Converter(Protocol):
    """One caller format; see the module docstring for the laws."""

    name: str

    def is_system(self, item: ItemDict) -> bool:
        """A leading item that is the caller's system prompt (kept first, never summarized)."""

    def units(self, items: list[ItemDict], offset: int = 0) -> list[Unit]:
        """The canonical messages of ``items`` (plain dicts, no leading system items);
        ``offset`` is the position of ``items[0]`` in the caller's list, for error messages."""

    def dump_message(self, message: Message) -> list[ItemDict]:
        """The caller's items for one canonical message."""


def passthrough(fmt: str, item: object = None, *, part: object = None) -> Block:
    """A block carrying a whole ``item`` (or a content ``part``) of ``fmt`` untouched."""
    if part is not None:
        return {"type": PASSTHROUGH, "format": fmt, "part": part}
    return {"type": PASSTHROUGH, "format": fmt, "item": item}


def is_passthrough(block: object, key: str = "item") -> TypeGuard[PassthroughBlock]:
    """A format's ``passthrough`` block holding ``key`` (a TypeGuard, not a TypeIs: one
    without the key is a passthrough block all the same)."""
    return isinstance(block, dict) and block.get("type") == PASSTHROUGH and key in block


def without(mapping: Mapping[str, object], *keys: str) -> ItemDict:
    return {k: v for k, v in mapping.items() if k not in keys}


@overload
def with_meta(target: Message, meta: ItemDict) -> Message: ...
@overload
def with_meta(target: Block, meta: ItemDict) -> Block: ...
def with_meta(target: Message | Block, meta: ItemDict) -> Message | Block:
    """``target`` with ``meta`` under the ``"openai"`` key, when there is any."""
    if meta:
        target[META] = meta
    return target


def bad_item(index: int, detail: str) -> InvalidHistory:
    return InvalidHistory([Violation(index, "malformed", detail)])


def as_item(value: object, index: int, what: str) -> ItemDict:
    """``value`` as a dict (an SDK object as the dict the API sent), or a clear error."""
    item = plain(value)
    if not isinstance(item, dict):
        got = type(value).__name__
        raise bad_item(index, f"expected {what} (a dict or an SDK object), got {got}")
    return item


def text_of(content: object) -> str:
    """The text of a system message's content (a string or a list of text parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


__all__ = [
    "META",
    "PASSTHROUGH",
    "Converter",
    "ItemDict",
    "Unit",
    "as_item",
    "bad_item",
    "is_passthrough",
    "passthrough",
    "text_of",
    "with_meta",
    "without",
]


def image_source(url: str) -> dict[str, str]:
    """An Anthropic image ``source`` for an OpenAI image URL (a ``data:`` URL becomes base64)."""
    if url.startswith("data:") and ";base64," in url:
        header, data = url[len("data:") :].split(";base64,", 1)
        return {"type": "base64", "media_type": header, "data": data}
    return {"type": "url", "url": url}


def split_and_convert(
    converter: Converter, items: Sequence[object], what: str
) -> tuple[list[ItemDict], list[Message]]:
    """``(system items, canonical messages)``: the leading system items as they are, then the
    rest converted by ``converter`` (the caller's items and SDK objects are not modified)."""
    plain_items = [as_item(v, i, what) for i, v in enumerate(items)]
    head = 0
    while head < len(plain_items) and converter.is_system(plain_items[head]):
        head += 1
    units = converter.units(plain_items[head:], head)
    return plain_items[:head], [u.message for u in units]


def dump_all(
    converter: Converter, messages: list[Message], system: Sequence[ItemDict] | None
) -> list[ItemDict]:
    """The caller's items for canonical ``messages``, after ``system``."""
    out = list(system or [])
    for message in messages:
        out.extend(converter.dump_message(message))
    return out


def dump_user(
    message: Message,
    dump_result: Callable[[ToolResultBlock], ItemDict],
    block_to_part: Callable[[Block], object],
) -> list[ItemDict]:
    """An OpenAI user message for ``message``, split where a tool result or a passthrough
    item stands: each of those becomes its own item (``dump_result``, or the item as it came),
    in place, and the other blocks are the user message's parts (``block_to_part``)."""
    meta = message.get(META) or {}
    content = message.get("content")
    if not isinstance(content, list):
        return [{**meta, "role": "user", "content": content}]
    out: list[ItemDict] = []
    parts: list[object] = []
    for block in content:
        if is_result(block) or is_passthrough(block):
            if parts:
                out.append({**meta, "role": "user", "content": parts})
                parts = []
            out.append(dump_result(block) if is_result(block) else block["item"])
        else:
            parts.append(block_to_part(block))
    if parts or not content:
        out.append({**meta, "role": "user", "content": parts})
    return out
