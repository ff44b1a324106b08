"""The archive door on disk: the files the model opens, written under a root, and a ledger of
which paths this store issued.

``DiskArchive`` is ``base.Archive`` over the layout of ``codec.py`` (transcripts named by a
uuid4 hex), for every backend that writes files the model opens with a plain file tool
(``FileStore``, ``SqliteStore``, ``PostgresStore``). What differs between backends is where
the issued paths are remembered: its ``Ledger`` (a framed file, a database table).

Invariants:

* A path is returned only once its file holds the whole text (``disk.atomic_write``);
  ``append_file`` adds at the end of its file.
* The ledger hears of a path *before* its file is written (``remember``), so a crash in
  between leaves the store knowing more, never less (the path was not returned yet).
* A content-addressed file is written once: an existing file with the same bytes is left
  alone (mtime included); one with other bytes (truncated, tampered with) is replaced. A
  seed tool-result file is never rewritten (S-1.3 reuses an existing file).
* Media files hold bytes, not text: ``read_bytes`` gives them back, ``read_text`` refuses
  them (``ValueError`` naming the path), so no caller takes an image for text.
* ``issued`` answers from the ledger (``known``), never from what happens to exist on disk:
  a file someone else put under root is not ours. A ledger that keeps a copy of each text
  (a database) gives back a file deleted behind our back (``recover``), and it is written
  again unless the ledger is read-only.
"""

from __future__ import annotations

import uuid
from typing import Protocol

from ..messages import Message
from .codec import (
    append_rel,
    archive_rel,
    blob_rel,
    decode,
    encode,
    is_media,
    jsonl,
    media_rel,
    sha256,
    tool_result_rel,
    transcript_rel,
)
from .disk import Root, append_bytes, atomic_write, binary_file, same_bytes
from .nofollow import read_file


class Ledger(Protocol):
    """Where a backend remembers the paths it issued (relative to root)."""

    @property
    def read_only(self) -> str | None:
        """Why writes are refused (None: they are not); a read-only ledger's files are
        served, never written again."""
        ...

    def remember(self, rel: str, kind: str, data: bytes | None) -> None:
        """``rel`` is about to be issued; ``data`` its bytes (None: a file kept as it is)."""
        ...

    def remember_pack(self, rel: str, parts: list[bytes], data: bytes) -> None:
        """``rel`` is about to be issued holding ``data``, the join of ``parts``."""
        ...

    def remember_append(self, rel: str, data: bytes) -> int | None:
        """``data`` is about to be added to the file ``rel``: the bytes the ledger holds of it
        before (None: it keeps no copy, and the file on disk is all there is)."""
        ...

    def known(self, rel: str) -> bool:
        """Whether this store (or one before it on this root or database) issued ``rel``."""
        ...

    def recover(self, rel: str) -> bytes | None:
        """The bytes of the issued file ``rel`` as the ledger keeps them, or None."""
        ...


class DiskArchive:
    """``base.Archive`` in files under ``root``, its issued paths in ``ledger``."""

    def __init__(self, root: Root, ledger: Ledger) -> None:
        self.folder = root
        self.root = root.name
        self.ledger = ledger

    def _write(self, rel: str, data: bytes) -> None:
        atomic_write(self.folder.inside(rel), data, self.folder.durable, self.folder.file_mode)

    def save_tool_result(self, tool_use_id: str, content: str) -> str:
        rel = tool_result_rel(tool_use_id)
        path = self.folder.inside(rel)
        if path.exists():
            self.ledger.remember(rel, "tool_result", None)
        else:
            data = encode(content)
            self.ledger.remember(rel, "tool_result", data)
            self._write(rel, data)
        return str(path)

    def save_blob(self, content: str) -> str:
        data = encode(content)
        return self._save_addressed(blob_rel(sha256(data)), "blob", data)

    def save_pack(self, pieces: list[str]) -> str:
        parts = [encode(piece) for piece in pieces]
        data = b"".join(parts)
        rel = blob_rel(sha256(data))
        path = self.folder.inside(rel)
        self.ledger.remember_pack(rel, parts, data)
        if not same_bytes(path, data):
            self._write(rel, data)
        return str(path)

    def save_media(self, data: bytes, media_type: str) -> str:
        return self._save_addressed(media_rel(sha256(data), media_type), "media", data)

    def write_transcript(self, messages: list[Message]) -> str:
        rel = transcript_rel(uuid.uuid4().hex)
        data = encode(jsonl(messages))
        self.ledger.remember(rel, "transcript", data)
        self._write(rel, data)
        return str(self.folder.path / rel)

    def save_messages(self, messages: list[Message]) -> str:
        data = encode(jsonl(messages))
        return self._save_addressed(archive_rel(sha256(data)), "archive", data)

    def append_file(self, name: str, text: str) -> str:
        rel = append_rel(name)
        data = encode(text)
        before = self.ledger.remember_append(rel, data)
        path = self.folder.inside(rel)
        durable, mode = self.folder.durable, self.folder.file_mode
        if before is None:
            # After a last line cut short, the new text starts a line of its own.
            append_bytes(path, data, durable, mode, data.endswith(b"\n"))
            return str(path)
        try:
            exported = path.lstat().st_size
        except FileNotFoundError:
            exported = -1
        if exported == before:
            append_bytes(path, data, durable, mode)
        else:
            # The export fell behind the ledger (a crash between the two, another worker, or
            # a file deleted): written again from the ledger's copy.
            atomic_write(path, self.ledger.recover(rel) or b"", durable, mode)
        return str(path)

    def issued(self, path: str) -> bool:
        rel = self.relative(path)
        return rel is not None and self.ledger.known(rel)

    def read_text(self, path: str) -> str:
        rel = self.relative(path)
        if rel is not None and is_media(rel) and self.ledger.known(rel):
            raise binary_file(path)
        return decode(self.read_bytes(path))

    def read_bytes(self, path: str) -> bytes:
        rel = self.relative(path)
        if rel is None or not self.ledger.known(rel):
            raise KeyError(f"not a path this store issued: {path}")
        file = self.folder.inside(rel)
        try:
            return read_file(file)
        except FileNotFoundError:
            data = self.ledger.recover(rel)
            if data is None:
                raise
            if self.ledger.read_only is None:  # a read-only store only serves it
                self._write(rel, data)
            return data

    def relative(self, path: str) -> str | None:
        """``path`` relative to root when it can be one this store issued, else None."""
        return self.folder.relative(path)

    def _save_addressed(self, rel: str, kind: str, data: bytes) -> str:
        path = self.folder.inside(rel)
        self.ledger.remember(rel, kind, data)
        if not same_bytes(path, data):
            self._write(rel, data)
        return str(path)


__all__ = ["DiskArchive", "Ledger"]
