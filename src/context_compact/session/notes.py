"""Notes: what the agent chose to keep, written with the ``notes`` tool and shown verbatim after
every summary, never summarized.

A note is the ``note`` input (a string with a non-blank character) of a ``notes`` tool call the
log holds; the notes of a conversation are those calls' notes in log order. Like the ledger
(``ledger.py``), they are a function of the logged messages alone, fed one message at a time
(``add``) as ``SessionState`` logs them: the journal's message records are their records, so
the live engine, a resume, a checkpoint's restore (``as_json``, ``from_json``) and an
``undo``'s rebuild hold the same notes, and a session killed at any point resumes with the
notes it had journaled. The tool's handler (``context_compact.tools``, the CLI agent) only
acknowledges: nothing but the log holds a note, so no handler state can disagree with it.

At each summary the whole notes text (``file_text``) is saved as one file of the store,
content-addressed (the same notes, the same path: a retried summary writes the same bytes),
and listed in the session's index; the summary message names it and carries the newest notes
that fit ``notes_tokens``, whole and verbatim (``shown``), quoted with the message's boundary
token (``markers.session_summary``): older ones leave the message, never the file. A newest
note longer than that room alone is shown cut at a line end, saying so. The shown part
changes only with a summary, so it costs no cache break of its own.
"""

from __future__ import annotations

from typing import Any

from ..markers import NOTE_CUT
from ..messages import Message, block_type, blocks

NOTES_TOOL = "notes"
NOTE_KEY = "note"
NOTES_DESCRIPTION = (
    "Keep a note for yourself: a decision, a finding, what is left to do. Your notes are "
    "shown to you again, verbatim, after every compaction of the conversation."
)
NOTES_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {NOTE_KEY: {"type": "string"}},
    "required": [NOTE_KEY],
}
NOTES_SCHEMA: dict[str, Any] = {
    "name": NOTES_TOOL,
    "description": NOTES_DESCRIPTION,
    "input_schema": NOTES_PARAMETERS,
}
"""The ``notes`` tool in the Anthropic Messages format."""


def note_of(arguments: Any) -> str | None:
    """The note a ``notes`` call's input holds, or None when it holds none (no ``note``
    string, or a blank one): such a call notes nothing, and its handler says so."""
    if not isinstance(arguments, dict):
        return None
    note = arguments.get(NOTE_KEY)
    return note if isinstance(note, str) and note.strip() else None


class Notes:
    def __init__(self) -> None:
        # [seq, note]: the message that wrote it, the note as written; oldest first.
        self.items: list[list[Any]] = []

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def add(self, seq: int, message: Message) -> None:
        """Take one logged message: the notes its ``notes`` calls write."""
        if message.get("role") != "assistant":
            return
        for block in blocks(message):
            if block_type(block) == "tool_use" and block.get("name") == NOTES_TOOL:
                note = note_of(block.get("input"))
                if note is not None:
                    self.items.append([seq, note])

    def file_text(self) -> str:
        """Every note, oldest first, each under a line numbering it: the notes file."""
        return "".join(
            f"--- note {n} (message {seq}) ---\n{note}\n"
            for n, (seq, note) in enumerate(self.items, 1)
        )

    def shown(self, chars: int) -> tuple[list[tuple[int, int, str]], int]:
        """The newest notes whose texts fit ``chars`` characters together, as (number,
        message, note), oldest first, and how many older ones are left out. The newest is
        shown even when longer, cut at a line end (``cut``)."""
        out: list[tuple[int, int, str]] = []
        room = chars
        for n in range(len(self.items), 0, -1):
            seq, note = self.items[n - 1]
            if len(note) + 1 > room:
                if not out and room > 0:
                    out.append((n, seq, cut(note, room)))
                break
            out.append((n, seq, note))
            room -= len(note) + 1
        return out[::-1], len(self.items) - len(out)

    def as_json(self) -> list[list[Any]]:
        return [list(item) for item in self.items]

    @staticmethod
    def from_json(raw: list[Any] | None) -> Notes:
        """The notes ``as_json`` wrote (none for None: a checkpoint from before notes)."""
        notes = Notes()
        notes.items = [[int(seq), str(note)] for seq, note in raw or ()]
        return notes


def cut(note: str, chars: int) -> str:
    """The head of ``note`` in about ``chars`` characters, cut at a line end where one is in
    its second half, ending with ``NOTE_CUT``."""
    keep = max(0, chars - len(NOTE_CUT) - 1)
    line = note.rfind("\n", 0, keep)
    head = note[: line if line > keep // 2 else keep].rstrip()
    return f"{head}\n{NOTE_CUT}" if head else NOTE_CUT


__all__ = [
    "NOTES_DESCRIPTION",
    "NOTES_PARAMETERS",
    "NOTES_SCHEMA",
    "NOTES_TOOL",
    "NOTE_KEY",
    "Notes",
    "cut",
    "note_of",
]
