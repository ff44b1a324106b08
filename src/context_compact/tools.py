"""Tools to hand your model so that it can read back anything that left its view: ``recall``
(search the whole session log, originals paged) and a paging ``read_file`` (any file the view
names, a page of lines at a time), and, if you want it, ``notes`` (notes the agent keeps,
shown verbatim after every summary: ``session/notes.py``), as tool definitions in the
Anthropic and the OpenAI Chat Completions formats, and ``ReadBack``, which runs them.

    from context_compact.tools import ReadBack, anthropic_tools

    tools = ReadBack(compactor, root=".")
    reply = client.messages.create(..., tools=[*your_tools, *anthropic_tools(notes=True)])
    for use in tool_uses:
        if tools.handles(use.name):
            text = tools.run(use.name, use.input)     # the tool_result's content

Invariants: ``read_file`` reads only files under ``root`` or paths the session's store issued
(every path a marker names is one), and refuses anything else in one line; every answer that
stops before the end says the offset to continue from, so paging is exact. Whole-file read
tools work too (the view pages what it recognizes as a persisted file), these just cost fewer
requests. ``notes`` only acknowledges: the engine reads each note from the call it logs, so
the notes are the log's and survive a resume or an undo as it does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from .markers import NOT_NOTED, NOTED
from .session.notes import NOTES_SCHEMA, NOTES_TOOL, note_of
from .session.recall import PAGE, RecallPage

READ_FILE = "read_file"
RECALL = "recall"
NOTES = NOTES_TOOL
LINES = 2_000
"""Lines a ``read_file`` answer holds unless the model asks for fewer."""

READ_FILE_DESCRIPTION = (
    "Read a text file: any path, including the files the context names for results and "
    "messages that left it. Long files come in pages of lines: pass the offset the answer "
    "gives to continue."
)
RECALL_DESCRIPTION = (
    "Search the whole conversation log, including everything compacted out of context, and "
    "get the original content back. query: text to find, a file path named in the context, "
    "or 'message N'. Long answers are paged: pass the offset the answer gives."
)
READ_FILE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The file's path."},
        "offset": {"type": "integer", "description": "First line to return, 1-based."},
        "limit": {"type": "integer", "description": f"Most lines to return (default {LINES})."},
    },
    "required": ["path"],
}
RECALL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Text, a path, or 'message N'."},
        "offset": {"type": "integer", "description": "Character offset of the page."},
    },
    "required": ["query"],
}


def anthropic_tools(notes: bool = False) -> list[dict[str, Any]]:
    """``read_file`` and ``recall`` as the Anthropic Messages API takes tools; with
    ``notes``, the ``notes`` tool too."""
    return [
        {
            "name": READ_FILE,
            "description": READ_FILE_DESCRIPTION,
            "input_schema": READ_FILE_PARAMETERS,
        },
        {"name": RECALL, "description": RECALL_DESCRIPTION, "input_schema": RECALL_PARAMETERS},
        *([dict(NOTES_SCHEMA)] if notes else []),
    ]


def openai_tools(notes: bool = False) -> list[dict[str, Any]]:
    """``read_file`` and ``recall`` (and ``notes`` with ``notes``) as OpenAI Chat
    Completions takes tools."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool["name"],
                "description": tool["description"],
                "parameters": tool["input_schema"],
            },
        }
        for tool in anthropic_tools(notes)
    ]


class Recalls(Protocol):
    """What ``ReadBack`` needs of a ``Compactor``: its store and its recall."""

    @property
    def store(self) -> Any: ...

    def recall(self, query: str, offset: int = 0, limit: int = PAGE) -> RecallPage: ...


class ReadBack:
    """Runs ``read_file`` and ``recall`` for ``compactor``'s session; files are read under
    ``root`` (the work directory) or from the session's store."""

    def __init__(self, compactor: Recalls, root: str | Path = ".") -> None:
        self.compactor = compactor
        self.root = Path(root).resolve()

    def handles(self, name: str) -> bool:
        return name in (READ_FILE, RECALL, NOTES)

    def run(self, name: str, arguments: dict[str, Any]) -> str:
        """The text of the tool's answer; a request it cannot serve is answered in one line
        saying why (the model can correct it), never raised."""
        try:
            if name == RECALL:
                offset = int(arguments.get("offset") or 0)
                return str(self.compactor.recall(str(arguments["query"]), offset=offset))
            if name == READ_FILE:
                return self.read_file(
                    str(arguments["path"]), arguments.get("offset"), arguments.get("limit")
                )
            if name == NOTES:
                return NOTED if note_of(arguments) is not None else f"error: {name}: {NOT_NOTED}"
        except (KeyError, TypeError, ValueError, OSError) as error:
            return f"error: {name}: {error}"
        return f"error: no tool {name!r} here: {READ_FILE}, {RECALL} and {NOTES} are"

    def read_file(self, path: str, offset: Any = None, limit: Any = None) -> str:
        """Lines ``offset``.. (1-based) of ``path``, at most ``limit``, with where to go on."""
        start = int(offset or 1)
        most = int(limit or LINES)
        if start < 1 or most < 1:
            raise ValueError("offset and limit must be at least 1")
        lines = self.text(path).splitlines(keepends=True)
        if lines and start > len(lines):
            raise ValueError(f"offset {start} is past the end of {path} ({len(lines)} lines)")
        end = min(len(lines), start - 1 + most)
        shown = "".join(lines[start - 1 : end])
        if end < len(lines):
            shown += f"\n... ({len(lines) - end} more lines; continue with offset={end + 1})"
        return shown

    def text(self, path: str) -> str:
        """The text of a file the store issued, or of one under ``root``."""
        store = self.compactor.store
        if store.issued(path):
            return str(store.read_text(path))
        full = (self.root / path).resolve()
        if not full.is_relative_to(self.root):
            raise ValueError(f"{path} is outside {self.root}")
        return full.read_text(encoding="utf-8", errors="replace")


__all__ = [
    "LINES",
    "NOTES",
    "READ_FILE",
    "RECALL",
    "ReadBack",
    "Recalls",
    "anthropic_tools",
    "openai_tools",
]
