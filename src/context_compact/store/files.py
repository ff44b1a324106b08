"""FileStore: the seed's on-disk layout under one root, UTF-8 always.

Layout (SPEC S-1.3, S-2.4), plus our content-addressed files:

    <root>/.task_outputs/tool-results/<safe id>.txt   seed: per tool_use id, never rewritten
    <root>/.task_outputs/tool-results/sha256-<hex>.txt content-addressed results (default)
    <root>/.transcripts/transcript_<uuid4 hex>.jsonl   seed: one per snip/summary
    <root>/.transcripts/archive_<hex>.jsonl            content-addressed message archives

Writes go to a temporary file first and are renamed into place, so a reader never sees a
half-written copy and a crash never leaves a truncated one behind.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from pathlib import Path
from typing import Any

from ..sizing import to_json

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def safe_id(tool_use_id: Any) -> str:
    """S-1.3: characters outside ``[A-Za-z0-9._-]`` become ``_``, cut to 120."""
    return _UNSAFE.sub("_", str(tool_use_id))[:120]


class FileStore:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.results_dir = self.root / ".task_outputs" / "tool-results"
        self.transcripts_dir = self.root / ".transcripts"
        self._issued: set[str] = set()

    def __repr__(self) -> str:
        return f"FileStore({str(self.root)!r})"

    def _write(self, path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        tmp.write_text(text, encoding="utf-8", newline="")
        os.replace(tmp, path)

    def _issue(self, path: Path) -> str:
        text = str(path)
        self._issued.add(text)
        return text

    def save_tool_result(self, tool_use_id: str, content: str) -> str:
        path = self.results_dir / f"{safe_id(tool_use_id)}.txt"
        if not path.exists():
            self._write(path, content)
        return self._issue(path)

    def save_blob(self, content: str) -> str:
        digest = hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()
        path = self.results_dir / f"sha256-{digest[:32]}.txt"
        if not path.exists():
            self._write(path, content)
        return self._issue(path)

    def write_transcript(self, messages: list[Any]) -> str:
        path = self.transcripts_dir / f"transcript_{uuid.uuid4().hex}.jsonl"
        self._write(path, _jsonl(messages))
        return self._issue(path)

    def save_messages(self, messages: list[Any]) -> str:
        text = _jsonl(messages)
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        path = self.transcripts_dir / f"archive_{digest[:32]}.jsonl"
        if not path.exists():
            self._write(path, text)
        return self._issue(path)

    def issued(self, path: str) -> bool:
        if path in self._issued:
            return True
        # A store reopened on the same root (a resumed session) honors what it wrote then.
        candidate = Path(path)
        try:
            resolved = candidate.resolve()
        except (OSError, ValueError):
            return False
        inside = any(
            resolved.is_relative_to(d.resolve()) for d in (self.results_dir, self.transcripts_dir)
        )
        return inside and resolved.is_file()

    def read_text(self, path: str) -> str:
        if not self.issued(path):
            raise KeyError(f"not a path this store issued: {path}")
        return Path(path).read_text(encoding="utf-8")


def _jsonl(messages: list[Any]) -> str:
    return "".join(to_json(m) + "\n" for m in messages)
