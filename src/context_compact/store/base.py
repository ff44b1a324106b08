"""The Store seam: where content goes before it leaves the context view.

Invariant (the project's first rule): a stage calls the store *before* it drops or shortens
anything, and puts the path the store returned into the view. Every path a store returns is
one it issued (``issued(path)`` is true), so only our own references are ever honored.
"""

from __future__ import annotations

from typing import Any, Protocol


class Store(Protocol):
    def save_tool_result(self, tool_use_id: str, content: str) -> str:
        """The seed's layout (S-1.3): one file per tool_use id; an existing file is reused."""
        ...

    def save_blob(self, content: str) -> str:
        """Content-addressed copy of a text; the same text always gets the same path."""
        ...

    def write_transcript(self, messages: list[Any]) -> str:
        """The seed's transcript (S-2.4): a new ``transcript_<uuid4 hex>.jsonl`` each call."""
        ...

    def save_messages(self, messages: list[Any]) -> str:
        """Content-addressed JSONL of messages: deterministic path, written once."""
        ...

    def issued(self, path: str) -> bool:
        """True when ``path`` names a file this store wrote."""
        ...

    def read_text(self, path: str) -> str:
        """The text behind a path this store issued (``KeyError`` otherwise)."""
        ...
