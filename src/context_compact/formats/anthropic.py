"""Anthropic Messages: the canonical format itself.

``to_canonical`` only turns SDK objects (``response.content``'s ``TextBlock``,
``ToolUseBlock``...) into the dicts the API sent; ``from_canonical`` is the identity. Blocks
the engines do not read (``compaction``, ``server_tool_use``, ``web_search_tool_result``,
``container_upload``...) stay where they are, untouched: no pass reads, splits or reorders a
message's blocks, and only ``tool_result`` content is ever replaced.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..messages import Message, as_dicts
from .base import ItemDict

NAME = "anthropic"


def to_canonical(messages: Sequence[object]) -> tuple[list[ItemDict], list[Message]]:
    """``([], messages)`` with SDK objects as dicts (an Anthropic list holds no system
    message: the system prompt is a request parameter)."""
    return [], list(as_dicts(messages))


def from_canonical(
    messages: list[Message], system: Sequence[ItemDict] | None = None
) -> list[Message]:
    """The canonical messages as they are (``system`` must be empty: see ``to_canonical``)."""
    if system:
        raise ValueError("an Anthropic history has no system messages; pass system= to the API")
    return list(messages)


__all__ = ["NAME", "from_canonical", "to_canonical"]
