"""The blocks a loader builds, in Anthropic's shape, and the text and arguments it reads.

Text is read out of whatever a log holds (a string, a list of parts, a dict with ``text``);
tool arguments that are not a JSON object are kept as they came, flagged, never dropped.
"""

from __future__ import annotations

import json
from typing import Any

from ..messages import Block, TextBlock, ToolResultBlock, ToolUseBlock, is_text

IMAGE = "[image]"


# ----------------------------------------------------------------------------- blocks


def text_block(text: str) -> TextBlock:
    return {"type": "text", "text": text}


def tool_use_block(use_id: str, name: str, arguments: dict[str, Any]) -> ToolUseBlock:
    return {"type": "tool_use", "id": use_id, "name": name, "input": arguments}


def tool_result_block(use_id: str, content: str) -> ToolResultBlock:
    return {"type": "tool_result", "tool_use_id": use_id, "content": content}


def text_of(value: Any) -> str:
    """Flatten a content value to a string.

    Strings pass through; lists of parts (Anthropic blocks, OpenAI content parts, Responses
    items) are joined with newlines, images becoming ``[image]``; ``None`` is empty.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(part for part in (_part_text(p) for p in value) if part)
    if isinstance(value, dict):
        return _part_text(value)
    return str(value)


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return "" if part is None else str(part)
    kind = part.get("type")
    if isinstance(kind, str) and "image" in kind:
        return IMAGE
    for key in ("text", "content", "output"):
        if key in part:
            return text_of(part[key])
    return f"[{kind}]" if isinstance(kind, str) else json.dumps(part, ensure_ascii=False)


def text_blocks(value: Any) -> list[Block]:
    """A content value as text blocks (none when it holds no text)."""
    text = text_of(value)
    return [text_block(text)] if text.strip() else []


def parse_arguments(raw: Any) -> tuple[dict[str, Any], bool]:
    """Tool-call arguments as the dict ``tool_use.input`` requires, and whether they parsed.

    OpenAI-style logs store arguments as a JSON string. Anything that is not a JSON object
    is kept, unparsed, under the key ``"arguments"``.
    """
    if raw is None:
        return {}, True
    if isinstance(raw, dict):
        return raw, True
    if isinstance(raw, str):
        if not raw.strip():
            return {}, True
        try:
            value = json.loads(raw)
        except ValueError:
            return {"arguments": raw}, False
        if isinstance(value, dict):
            return value, True
        return {"arguments": value}, False
    return {"arguments": raw}, False


def _keep(block: Block) -> bool:
    # The API rejects empty and whitespace-only text blocks; logs are full of them.
    return not is_text(block) or (
        isinstance(block.get("text"), str) and bool(block["text"].strip())
    )
