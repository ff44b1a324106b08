"""Images and documents that leave the view, saved as files of their own.

A summary archives the messages it replaces as JSONL, where an image is a long base64
string: kept, but not something a person or a tool can open. So before a summary's edit
exists, every image or document in the messages leaving the view (in a message's content or
inside a tool result) is also written through the store as its own file: the decoded bytes,
content-addressed, named by the extension of its media type (``store.save_media``); a text
document is saved as text (``save_blob``). A URL or file-id source needs no file: its
reference is named as it is. A payload that is not valid base64 stays in the archive only,
and its line says so.

Each export becomes one line of the session's index and, for the newest, a line of the
summary message, so every one is at most two reads away from the view. Those lines sit
outside the summary's quote, so nothing a tool supplied reaches them as it is: a URL, a file
id, an unknown source type or a tool_use id is written as a JSON string (one line, ASCII
escapes, angle brackets escaped, clipped: ``inert``), and a media type only when it looks
like one (``type/subtype``). A write the store
refuses raises like the pass's other writes: no edit, the content stays in view.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from .. import markers
from ..media import decoded, describe
from ..messages import Block, Message, block_type, blocks
from ..quoting import inert
from ..store.base import Store

_MEDIA_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+-]{0,40}/[A-Za-z0-9][A-Za-z0-9.+-]{0,60}")
_PLAIN_ID = re.compile(r"[A-Za-z0-9_-]{1,80}")


def media_type_of(value: object) -> str:
    text = str(value or "")
    return text if _MEDIA_TYPE.fullmatch(text) else ""


def tool_id(value: object) -> str:
    text = str(value)
    return text if _PLAIN_ID.fullmatch(text) else inert(text, 80)


@dataclass(frozen=True)
class Export:
    """One image or document that left the view: where it was, what it is, where it now is
    (a store path, the URL or file id it came from, or None: only in the archive)."""

    seq: int
    kind: str
    where: str
    what: str
    ref: str | None

    def about(self) -> str:
        return f"message {self.seq}{self.where}, {self.kind}: {self.what}"


def media_blocks(message: Message) -> Iterator[tuple[str, Block]]:
    """Every image or document block of a message, with where it sits ('' or the tool
    result it is inside)."""
    for block in blocks(message):
        kind = block_type(block)
        if kind in ("image", "document"):
            yield "", block
        elif kind == "tool_result" and isinstance(inner := block.get("content"), list):
            for part in inner:
                if block_type(part) in ("image", "document"):
                    yield f" (tool result {tool_id(block.get('tool_use_id'))})", part


def _export(store: Store, seq: int, where: str, block: Block) -> Export:
    kind = str(block_type(block))
    source = block.get("source")
    source = source if isinstance(source, dict) else {}
    media_type = media_type_of(source.get("media_type"))
    origin = source.get("type")
    if origin == "url":
        url = inert(source.get("url"), 2_000)
        return Export(seq, kind, where, f"{media_type or kind} from a URL", url)
    if origin == "file":
        file_id = inert(source.get("file_id"))
        return Export(seq, kind, where, "an uploaded file", f"file id {file_id}")
    if origin == "text":
        text = str(source.get("data", ""))
        return Export(seq, kind, where, f"text, {len(text):,} chars", store.save_blob(text))
    if origin == "base64":
        data = decoded(source.get("data"))
        if data is None:
            return Export(seq, kind, where, f"{media_type}, base64 not decodable", None)
        return Export(
            seq, kind, where, describe(data, media_type), store.save_media(data, media_type)
        )
    return Export(seq, kind, where, f"source {inert(origin, 60)}", None)


def export_media(store: Store, leaving: Iterable[tuple[int, Message]]) -> list[Export]:
    """Save every image and document of the messages leaving the view; one ``Export`` each."""
    return [
        _export(store, seq, where, block)
        for seq, message in leaving
        for where, block in media_blocks(message)
    ]


def without_media(message: Message, seq: int, exports: list[Export]) -> Message:
    """``message`` with each of its own image or document blocks (``exports`` of it, in
    order) replaced by a text block naming the file that holds it; the rest as it is."""
    saved = iter(exports)
    content: list[Block] = []
    for block in blocks(message):
        if block_type(block) in ("image", "document"):
            export = next(saved)
            block = {"type": "text", "text": markers.media_saved(export.about(), export.ref, seq)}
        content.append(block)
    return {**message, "content": content}


def index_lines(exports: list[Export], archive: str) -> list[str]:
    """One index line each; one left in the archive only is listed under the archive."""
    return [markers.index_line(e.kind, e.ref or archive, e.about()) for e in exports]


def summary_line(exports: list[Export], archive: str) -> str:
    return markers.media_line([(e.about(), e.ref or archive) for e in exports])


__all__ = [
    "Export",
    "export_media",
    "index_lines",
    "inert",
    "media_blocks",
    "summary_line",
    "without_media",
]
