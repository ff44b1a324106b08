"""recall: search a whole session log and get the original content back, paged, in one call.

    page = recall(store, session_id, "TypeError")            # text search, case-insensitive
    page = recall(store, session_id, "/work/.task_outputs/tool-results/sha256-...txt")
    page = recall(store, session_id, "message 412")          # one logged message by position
    page = recall(store, session_id, "TypeError", offset=page.next_offset)

The query is, in this order: a path the store issued (its text), ``message N`` or ``#N`` (the
original message at position N of the session), or text, found in every logged message
(text blocks, tool inputs, tool results, whatever their size or whether they are still in
view). The answer is the original content, never a preview, cut into pages of ``limit``
characters; ``next_offset`` continues. Only the session's own journal and the store's own
files are read: a path that appears inside some tool output is not a reference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..messages import block_type, blocks, readable_text
from ..sizing import to_json
from ..store.base import Store

PAGE = 8_000
_POSITION = re.compile(r"^\s*(?:message\s+|#)(\d+)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class RecallPage:
    query: str
    hits: int
    text: str
    offset: int
    total: int

    @property
    def next_offset(self) -> int | None:
        end = self.offset + len(self.text)
        return end if end < self.total else None

    def __str__(self) -> str:
        if not self.hits:
            return f"[recall {self.query!r}: nothing found in this session's log]"
        more = f"; more from offset={self.next_offset}" if self.next_offset is not None else ""
        head = (
            f"[recall {self.query!r}: {self.hits} match(es), characters "
            f"{self.offset}-{self.offset + len(self.text)} of {self.total}{more}]\n"
        )
        return head + self.text


def message_text(message: Any) -> str:
    """Everything readable in a message: text, tool inputs, tool results, in order."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = []
    for block in blocks(message):
        kind = block_type(block)
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "tool_use":
            parts.append(f"[tool_use {block.get('name')} {to_json(block.get('input'))}]")
        elif kind == "tool_result":
            text = readable_text(block)
            shown = text if text is not None else to_json(block.get("content"))
            parts.append(f"[tool_result {block.get('tool_use_id')}]\n{shown}")
        else:
            parts.append(to_json(block))
    return "\n".join(parts)


def _matches(store: Store, session: str, query: str) -> list[str]:
    if store.issued(query.strip()):
        return [f"=== {query.strip()} ===\n{store.read_text(query.strip())}"]
    position = _POSITION.match(query)
    needle = query.casefold()
    found = []
    for record in store.records(session):
        if record.get("kind") != "message":
            continue
        message = record["message"]
        seq = record["seq"]
        if position is not None:
            if seq == int(position.group(1)):
                return [f"=== message {seq} ({message.get('role')}) ===\n{message_text(message)}"]
            continue
        text = message_text(message)
        if needle and needle in text.casefold():
            found.append(f"=== message {seq} ({message.get('role')}) ===\n{text}")
    return found


def recall(
    store: Store, session: str, query: str, *, offset: int = 0, limit: int = PAGE
) -> RecallPage:
    if not isinstance(query, str) or not query.strip():
        raise ValueError("recall needs a non-empty query: text, a path, or 'message N'")
    if offset < 0 or limit <= 0:
        raise ValueError(f"recall: offset must be >= 0 and limit > 0, got {offset}, {limit}")
    hits = _matches(store, session, query)
    whole = "\n\n".join(hits)
    return RecallPage(query, len(hits), whole[offset : offset + limit], offset, len(whole))


__all__ = ["PAGE", "RecallPage", "message_text", "recall"]
