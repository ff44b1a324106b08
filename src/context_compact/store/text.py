"""What a session search reads in a journal: the readable text of each logged message.

``codec.message_text`` is the text ``recall`` shows and searches: text blocks, tool inputs
(``[tool_use NAME {json}]``), tool results (``[tool_result ID]`` and their text), any other
block as JSON, in order. A journal record is searchable when its kind is ``"message"``; a
query matches it when ``query.casefold()`` is a substring of its ``message_text`` followed
by its tool calls' string arguments as written, casefolded (``searchable``, ``matches``).
Every store's ``search`` answers exactly that (``scan`` is the reference: every record read
in order); an index only makes it faster.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ..messages import block_type, blocks
from .codec import Record, message_text


def raw_inputs(message: Any) -> str:
    """The string arguments of a message's tool calls as written (``message_text`` shows
    them as JSON, where a quote or a newline is escaped: a query typed as the command was
    would not match)."""
    parts = []
    for block in blocks(message):
        if block_type(block) != "tool_use":
            continue
        args = block.get("input")
        for value in args.values() if isinstance(args, dict) else ():
            items = value if isinstance(value, list) else [value]
            parts += [v for v in items if isinstance(v, str)]
    return "\n" + "\n".join(parts) if parts else ""


def searchable(record: Record) -> str | None:
    """The folded text a search looks in (the message's text and its tool calls' string
    arguments as written), or None for a record that is not a message."""
    message = record.get("message") if record.get("kind") == "message" else None
    if not isinstance(message, dict):
        return None
    return (message_text(message) + raw_inputs(message)).casefold()


def matches(record: Record, folded: str) -> bool:
    """True when ``folded`` (a casefolded query) is in the record's searchable text."""
    text = searchable(record)
    return text is not None and bool(folded) and folded in text


def scan(records: Iterable[Record], query: str) -> Iterator[Record]:
    """The reference search: every record, in order, tested with ``matches``."""
    folded = query.casefold()
    return (record for record in records if matches(record, folded))
