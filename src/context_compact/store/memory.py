"""MemoryStore: the Store protocol in dicts, for tests and benchmarks.

Files live in ``files`` (path -> text; media files in ``media``, path -> bytes) under a fake
root, at the paths ``FileStore`` would issue, except that transcripts are numbered instead of
named by a uuid (deterministic runs).
Nothing touches the disk and nothing survives the process. It has no search index: a search
reads every record (``base.search``).

The journal keeps each appended batch as its JSON text, like the durable stores do, so
``records`` hands out fresh copies equal to what was appended after a JSON round trip (and a
caller mutating its records later changes nothing stored), and what JSON cannot hold is
refused at ``append`` here too.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Iterator
from itertools import islice

from ..messages import Message
from .base import CHECKPOINT_KIND, Meta, Record
from .codec import (
    append_rel,
    archive_rel,
    blob_rel,
    dumps,
    dumps_records,
    encode,
    jsonl,
    media_rel,
    sha256,
    tool_result_rel,
    transcript_rel,
)
from .disk import binary_file
from .journal import SessionExists, check_records, new_meta


class MemoryStore:
    def __init__(self, root: str = "/memory") -> None:
        self.root = root
        self.files: dict[str, str] = {}
        self.media: dict[str, bytes] = {}
        self._transcripts = 0
        self._sessions: dict[str, str] = {}  # id -> meta JSON, in creation order
        self._journals: dict[str, list[str]] = {}  # id -> one JSON array per append
        self._starts: dict[str, list[int]] = {}  # id -> each append's first position, and the end
        self._marks: dict[str, list[int]] = {}  # id -> positions of its checkpoint records

    def __repr__(self) -> str:
        return f"MemoryStore({self.root!r})"

    def _path(self, rel: str) -> str:
        return f"{self.root}/{rel}"

    # -- files the model can open --------------------------------------------------------------
    def save_tool_result(self, tool_use_id: str, content: str) -> str:
        path = self._path(tool_result_rel(tool_use_id))
        self.files.setdefault(path, content)
        return path

    def save_blob(self, content: str) -> str:
        path = self._path(blob_rel(sha256(encode(content))))
        self.files.setdefault(path, content)
        return path

    def save_pack(self, pieces: list[str]) -> str:
        return self.save_blob("".join(pieces))

    def save_media(self, data: bytes, media_type: str) -> str:
        path = self._path(media_rel(sha256(data), media_type))
        self.media.setdefault(path, bytes(data))
        return path

    def write_transcript(self, messages: list[Message]) -> str:
        self._transcripts += 1
        path = self._path(transcript_rel(f"{self._transcripts:032x}"))
        self.files[path] = jsonl(messages)
        return path

    def save_messages(self, messages: list[Message]) -> str:
        text = jsonl(messages)
        path = self._path(archive_rel(sha256(encode(text))))
        self.files.setdefault(path, text)
        return path

    def append_file(self, name: str, text: str) -> str:
        path = self._path(append_rel(name))
        self.files[path] = self.files.get(path, "") + text
        return path

    def issued(self, path: str) -> bool:
        return path in self.files or path in self.media

    def read_text(self, path: str) -> str:
        if path in self.media:
            raise binary_file(path)
        if path not in self.files:
            raise KeyError(f"not a path this store issued: {path}")
        return self.files[path]

    def read_bytes(self, path: str) -> bytes:
        if path in self.media:
            return self.media[path]
        return encode(self.read_text(path))

    # -- the session journal ---------------------------------------------------------------------
    def create_session(self, meta: Meta) -> str:
        session, full = new_meta(meta)
        if session in self._sessions:
            raise SessionExists(f"session {session!r} already exists in {self.root}")
        self._sessions[session] = dumps(full)
        self._journals[session] = []
        self._starts[session] = [0]
        self._marks[session] = []
        return session

    def session_meta(self, session: str) -> Meta | None:
        text = self._sessions.get(session)
        return None if text is None else dict(json.loads(text))

    def list_sessions(self) -> list[Meta]:
        metas = [json.loads(text) for text in reversed(self._sessions.values())]
        # Stable sort: sessions created at the same instant stay newest first.
        return sorted(metas, key=lambda m: str(m["created"]), reverse=True)

    def append(self, session: str, records: list[Record]) -> None:
        check_records(records)
        if session not in self._journals:
            raise KeyError(f"no session {session!r} in {self.root}")
        if records:
            self._journals[session].append(dumps_records(records))
            end = self._starts[session][-1]
            self._marks[session] += [
                end + i for i, r in enumerate(records) if r["kind"] == CHECKPOINT_KIND
            ]
            self._starts[session].append(end + len(records))

    def records(self, session: str) -> Iterator[Record]:
        if session not in self._journals:
            raise KeyError(f"no session {session!r} in {self.root}")
        batches = list(self._journals[session])  # a snapshot, like the durable stores give
        return (record for batch in batches for record in json.loads(batch))

    def checkpoints(self, session: str) -> list[int]:
        if session not in self._journals:
            raise KeyError(f"no session {session!r} in {self.root}")
        return list(self._marks[session])

    def records_from(self, session: str, start: int) -> Iterator[Record]:
        if session not in self._journals:
            raise KeyError(f"no session {session!r} in {self.root}")
        starts = self._starts[session]
        first = max(0, bisect_right(starts, start) - 1)
        batches = self._journals[session][first:]
        skip = start - starts[first] if first < len(starts) else 0
        found = (record for batch in batches for record in json.loads(batch))
        return islice(found, max(0, skip), None)

    def claim(self, session: str) -> None:
        """One process only: nothing to lease; an unknown session is still a ``KeyError``."""
        if session not in self._sessions:
            raise KeyError(f"no session {session!r} in {self.root}")

    def close(self) -> None:
        pass
