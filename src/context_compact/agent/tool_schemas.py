"""The agent's tools as the model sees them: the six tools' schemas in Anthropic format and the
optional ``recall`` and ``notes`` tools'. What they do is ``tools.Workspace`` (``notes`` only
acknowledges: the engine reads each note from the call it logs, ``session/notes.py``).
"""

from __future__ import annotations

from typing import Any

from ..session.notes import NOTES_SCHEMA as NOTES_SCHEMA
from ..session.notes import NOTES_TOOL

NOTES_TOOL_NAME = NOTES_TOOL

COMPACT_TOOL_NAME = "compact"

TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "name": "bash",
        "description": "Run a shell command.",
        "input_schema": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
    {
        "name": "read_file",
        "description": "Read file contents.",
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "limit": {"type": "integer", "description": "Most lines to return."},
                "offset": {
                    "type": "integer",
                    "description": "First line to return, 1-based (default 1).",
                },
            },
            "required": ["path"],
        },
    },
    {
        "name": "write_file",
        "description": "Write content to a file.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
    {
        "name": "edit_file",
        "description": "Replace exact text in a file once.",
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old_text": {"type": "string"},
                "new_text": {"type": "string"},
            },
            "required": ["path", "old_text", "new_text"],
        },
    },
    {
        "name": "glob",
        "description": "Find files matching a glob pattern; ** matches recursively.",
        "input_schema": {
            "type": "object",
            "properties": {"pattern": {"type": "string"}},
            "required": ["pattern"],
        },
    },
    {
        "name": COMPACT_TOOL_NAME,
        "description": "Summarize earlier conversation to free context space.",
        "input_schema": {"type": "object", "properties": {}},
    },
]

RECALL_TOOL_NAME = "recall"
RECALL_SCHEMA: dict[str, Any] = {
    "name": RECALL_TOOL_NAME,
    "description": (
        "Search the whole conversation log, including everything compacted out of context, "
        "and get the original content back. query: text to find, a file path named in the "
        "context, or 'message N'. Long answers are paged: pass the offset it gives."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "offset": {"type": "integer", "description": "Character offset of the page."},
        },
        "required": ["query"],
    },
}
