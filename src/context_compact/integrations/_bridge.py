"""What every framework adapter shares: framework objects in, canonical dicts through the
compactor, the same framework objects back out.

An adapter converts the framework's messages to Anthropic-shaped dicts (the canonical format),
lets the compactor decide the view, and maps the view back. Messages the compactor did not
change come back as the very objects the framework gave (``Origins``: by content key, in
order), so ids, metadata and provider fields survive untouched. A tool result whose content
the compactor replaced (a preview, a cleared marker) is rebuilt from its original with only
the content changed; only messages the compactor wrote itself (a summary) are built new.

``Units`` keeps the conversion of each framework message between calls, keyed by object
identity, so the compactor sees the same dict objects again and recognizes the history in a
pass of ``is`` checks instead of rehashing it every turn.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..keys import content_key
from ..messages import Message, ToolResultBlock, blocks, is_result


class Origins:
    """Framework objects by the content key of the dict they became, and each tool result's
    converted block with the framework object that holds it, by tool id."""

    def __init__(self) -> None:
        self._by_key: dict[str, deque[Any]] = {}
        self._results: dict[str, tuple[ToolResultBlock, Any]] = {}

    def add(self, key: str, origin: Any) -> None:
        self._by_key.setdefault(key, deque()).append(origin)

    def add_result(self, block: ToolResultBlock, origin: Any) -> None:
        self._results[block["tool_use_id"]] = (block, origin)

    def take(self, message: Message) -> Any | None:
        """The origin of a dict equal to ``message``, oldest first; None for a new dict."""
        queue = self._by_key.get(content_key(message))
        return queue.popleft() if queue else None

    def result(self, tool_use_id: str) -> tuple[ToolResultBlock, Any] | None:
        return self._results.get(tool_use_id)


@dataclass(frozen=True)
class Converted:
    """One unit of framework objects (a message, or results that share one user turn), the
    canonical dict it became, and that dict's content key."""

    unit: tuple[Any, ...]
    message: Message
    key: str


class Units:
    """Conversions of framework messages, reused while the same objects come back."""

    def __init__(self) -> None:
        self._memo: dict[tuple[int, ...], Converted] = {}

    def convert(
        self, units: list[tuple[Any, ...]], build: Callable[[tuple[Any, ...]], Message]
    ) -> list[Converted]:
        """A ``Converted`` for each unit; the memo keeps only this call's units, so it never
        outgrows the history."""
        memo: dict[tuple[int, ...], Converted] = {}
        out = []
        for unit in units:
            ids = tuple(map(id, unit))
            hit = self._memo.get(ids)
            # A kept unit holds its objects alive, so an id cannot be reused while it is kept.
            if hit is None or any(a is not b for a, b in zip(hit.unit, unit, strict=True)):
                message = build(unit)
                hit = Converted(unit, message, content_key(message))
            memo[ids] = hit
            out.append(hit)
        self._memo = memo
        return out


def origins_of(converted: list[Converted]) -> Origins:
    origins = Origins()
    for item in converted:
        origins.add(item.key, item.unit)
    return origins


def results_in(message: Message) -> list[ToolResultBlock]:
    return [b for b in blocks(message) if is_result(b)]


def text_of(content: Any) -> str:
    """The text of a message content: a string, or its text blocks (or strings) joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            part if isinstance(part, str) else str(part.get("text", ""))
            for part in content
            if isinstance(part, str) or (isinstance(part, dict) and part.get("type") == "text")
        ]
        return "\n".join(parts)
    return ""
