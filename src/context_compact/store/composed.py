"""A store made of parts: the archive door and the journal door, each held by its own object.

A backend builds its parts (``FileStore``: a ``DiskArchive`` over its ledger file and its
journal files; ``SqliteStore``: the same archive over its database's ``files`` table, and its
journal) and inherits from ``Composed``, which answers each method of the two doors
(``base.Archive``, ``base.Journal``) by calling the part that has it, nothing more. What the
backend can do besides (``base.Searches``, ``BatchesTurns``...) it says itself, each method a
call to the part that does it, and its ``close`` closes its parts.

A store of one's own need not be made so: one class with the doors' methods is a ``Store``
too (``MemoryStore``; docs/store-backend.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..messages import Message
from .base import Archive, Journal, Meta
from .codec import RESULTS, TRANSCRIPTS, Record
from .disk import Root


class Composed:
    """The two doors of a store answered by its parts ``archive`` and ``journal``."""

    archive: Archive
    journal: Journal
    root: str
    root_path: Path
    results_dir: Path
    transcripts_dir: Path
    durable: bool
    file_mode: int

    def _place(self, folder: Root) -> None:
        """Name the folder the store's files live under, and the layout's folders in it."""
        self.folder = folder
        self.root, self.root_path = folder.name, folder.path
        self.results_dir = folder.path / RESULTS
        self.transcripts_dir = folder.path / TRANSCRIPTS
        self.durable, self.file_mode = folder.durable, folder.file_mode

    # -- the archive ---------------------------------------------------------------------------
    def save_tool_result(self, tool_use_id: str, content: str) -> str:
        return self.archive.save_tool_result(tool_use_id, content)

    def save_blob(self, content: str) -> str:
        return self.archive.save_blob(content)

    def save_pack(self, pieces: list[str]) -> str:
        return self.archive.save_pack(pieces)

    def save_media(self, data: bytes, media_type: str) -> str:
        return self.archive.save_media(data, media_type)

    def write_transcript(self, messages: list[Message]) -> str:
        return self.archive.write_transcript(messages)

    def save_messages(self, messages: list[Message]) -> str:
        return self.archive.save_messages(messages)

    def append_file(self, name: str, text: str) -> str:
        return self.archive.append_file(name, text)

    def issued(self, path: str) -> bool:
        return self.archive.issued(path)

    def read_text(self, path: str) -> str:
        return self.archive.read_text(path)

    def read_bytes(self, path: str) -> bytes:
        return self.archive.read_bytes(path)

    # -- the journal ---------------------------------------------------------------------------
    def create_session(self, meta: Meta) -> str:
        return self.journal.create_session(meta)

    def session_meta(self, session: str) -> Meta | None:
        return self.journal.session_meta(session)

    def list_sessions(self) -> list[Meta]:
        return self.journal.list_sessions()

    def append(self, session: str, records: list[Record]) -> None:
        self.journal.append(session, records)

    def records(self, session: str) -> Iterator[Record]:
        return self.journal.records(session)

    def claim(self, session: str) -> None:
        self.journal.claim(session)


__all__ = ["Composed"]
