"""Anthropic Messages API histories: what a loop over the Anthropic SDK keeps, and what
``context-compact export --format anthropic|jsonl`` writes.

Accepted documents:

* a JSON list of messages ``{"role": "user" | "assistant", "content": str | [block, ...]}``;
* a JSON object with that list under ``messages`` and the system prompt under ``system`` (a
  string or a list of text blocks), as a request body or an export holds it;
* JSON Lines, one message per line; a first line ``{"role": "system", "content": ...}`` is
  the system prompt.

What is kept: ``text``, ``tool_use`` (``id``, ``name``, dict ``input``) and ``tool_result``
blocks (content flattened to a string, ``is_error`` kept when true), and, unlike the other
formats, ``image`` and ``document`` blocks as they are: a history in this format is meant to
be sent again. ``thinking`` / ``redacted_thinking`` blocks are dropped (their signatures bind
them to the response they came in); any other block type is skipped and counted. The shared
builder (``_common.py``) repairs and counts what the API would refuse.

Told apart from OpenAI chat by its blocks: at least one message holds a ``tool_use``,
``tool_result``, ``image`` or ``document`` block, or a top-level ``system`` key sits beside
``messages``. A history of plain strings reads the same under both loaders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._common import (
    HistoryBuilder,
    Session,
    join_system,
    make_session,
    message_blocks,
    stem,
    text_of,
    unknown_format,
)

FORMAT = "anthropic"

_MARKS = frozenset({"tool_use", "tool_result", "image", "document", "thinking"})


def is_anthropic(document: Any) -> bool:
    """Whether a parsed document (or list of JSON Lines records) is this format."""
    if isinstance(document, dict):
        if not isinstance(document.get("messages"), list):
            return False
        if "system" in document and not {"info", "trajectory_format"} & document.keys():
            return True
        document = document["messages"]
    if not isinstance(document, list):
        return False
    for message in document:
        if not isinstance(message, dict) or "tool_calls" in message:
            continue
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in _MARKS for b in content
        ):
            return True
    return False


def load_document(document: Any, source: str | Path) -> list[Session]:
    """The one session of a document (a list of messages, or ``{"system", "messages"}``)."""
    system: list[str] = []
    messages = document
    if isinstance(document, dict):
        messages = document.get("messages")
        system.append(text_of(document.get("system")))
    if not isinstance(messages, list):
        raise unknown_format(source, "no list of Anthropic messages")
    builder = HistoryBuilder()
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "system" and index == 0:
            system.append(text_of(message.get("content")))
            continue
        if role not in ("user", "assistant"):
            builder.skip("malformed_message" if role is None else "unknown_role")
            continue
        blocks = message_blocks(builder, message.get("content"), "malformed_message")
        if role == "assistant":
            builder.assistant(blocks)
        else:
            builder.user(blocks)
    return [make_session(stem(source), FORMAT, join_system(system), builder, source)]
