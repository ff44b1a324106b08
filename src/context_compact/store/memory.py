"""MemoryStore: the Store protocol in a dict, for tests and benchmarks.

Same paths as ``FileStore`` would issue (under a fake root), nothing touches the disk.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..sizing import to_json
from .files import safe_id


class MemoryStore:
    def __init__(self, root: str = "/memory") -> None:
        self.root = root
        self.files: dict[str, str] = {}
        self._transcripts = 0

    def save_tool_result(self, tool_use_id: str, content: str) -> str:
        path = f"{self.root}/.task_outputs/tool-results/{safe_id(tool_use_id)}.txt"
        self.files.setdefault(path, content)
        return path

    def save_blob(self, content: str) -> str:
        digest = hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        path = f"{self.root}/.task_outputs/tool-results/sha256-{digest}.txt"
        self.files.setdefault(path, content)
        return path

    def write_transcript(self, messages: list[Any]) -> str:
        self._transcripts += 1
        path = f"{self.root}/.transcripts/transcript_{self._transcripts:032x}.jsonl"
        self.files[path] = "".join(to_json(m) + "\n" for m in messages)
        return path

    def save_messages(self, messages: list[Any]) -> str:
        text = "".join(to_json(m) + "\n" for m in messages)
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        path = f"{self.root}/.transcripts/archive_{digest}.jsonl"
        self.files.setdefault(path, text)
        return path

    def issued(self, path: str) -> bool:
        return path in self.files

    def read_text(self, path: str) -> str:
        if path not in self.files:
            raise KeyError(f"not a path this store issued: {path}")
        return self.files[path]
