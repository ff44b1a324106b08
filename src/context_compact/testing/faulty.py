"""A store that fails on purpose: disk full, read-only, or any OSError, on the calls you choose.

    store = FaultyStore(FileStore(root), fail=WRITES, error=disk_full())     # every write
    store = FaultyStore(MemoryStore(), fail={"save_blob"}, skip=2, times=1)  # the third blob

It wraps a real store and forwards every call; a call named in ``fail`` raises ``error``
instead, after ``skip`` such calls went through and for ``times`` calls (None: for ever). A
failing call does nothing: the inner store is not called, as when the disk refuses the
write. ``calls`` lists every call made, ``failed`` the ones that raised. Shipped in the
package (not in the tests) so that an application can drive its own fault drills with it.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from ..store.base import OPTIONAL, Meta, Record, Searches, Store

T = TypeVar("T")

WRITES = frozenset(
    {
        "save_tool_result",
        "save_blob",
        "save_pack",
        "save_media",
        "write_transcript",
        "save_messages",
        "append_file",
        "create_session",
        "append",
    }
)
"""Every call that writes: the ones a full or read-only disk refuses."""
FILES = WRITES - {"create_session", "append"}
"""The calls that write files the model can open (not the journal)."""


def disk_full() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def read_only() -> PermissionError:
    return PermissionError(errno.EACCES, os.strerror(errno.EACCES))


class FaultyStore:
    def __init__(
        self,
        inner: Store,
        fail: Iterable[str] = WRITES,
        error: OSError | None = None,
        *,
        skip: int = 0,
        times: int | None = None,
    ) -> None:
        self.inner = inner
        self.root = inner.root
        self.fail = frozenset(fail)
        self.error = error if error is not None else disk_full()
        self.skip = skip
        self.times = times
        self.calls: list[str] = []
        self.failed: list[str] = []
        for name in OPTIONAL:  # on the instance, so isinstance sees them (store/base.py)
            if hasattr(inner, name):
                setattr(self, name, getattr(inner, name))
        if isinstance(inner, Searches):  # its index searched as a call like the others
            self.search = self._searcher(inner)

    def _searcher(self, index: Searches) -> Callable[[str, str], Iterator[Record]]:
        return lambda session, query: self._call("search", lambda: index.search(session, query))

    def __getattr__(self, name: str) -> Any:
        # Whatever else the inner store offers (root_path, close...), unchanged.
        return getattr(self.inner, name)

    def _call(self, name: str, call: Callable[[], T]) -> T:
        self.calls.append(name)
        if name in self.fail:
            if self.skip > 0:
                self.skip -= 1
            elif self.times is None or self.times > 0:
                if self.times is not None:
                    self.times -= 1
                self.failed.append(name)
                raise self.error
        return call()

    def heal(self) -> None:
        """Stop failing (the disk was cleared)."""
        self.fail = frozenset()

    # -- files -------------------------------------------------------------------------
    def save_tool_result(self, tool_use_id: str, content: str) -> str:
        return self._call(
            "save_tool_result", lambda: self.inner.save_tool_result(tool_use_id, content)
        )

    def save_blob(self, content: str) -> str:
        return self._call("save_blob", lambda: self.inner.save_blob(content))

    def save_pack(self, pieces: list[str]) -> str:
        return self._call("save_pack", lambda: self.inner.save_pack(pieces))

    def save_media(self, data: bytes, media_type: str) -> str:
        return self._call("save_media", lambda: self.inner.save_media(data, media_type))

    def write_transcript(self, messages: list[Any]) -> str:
        return self._call("write_transcript", lambda: self.inner.write_transcript(messages))

    def save_messages(self, messages: list[Any]) -> str:
        return self._call("save_messages", lambda: self.inner.save_messages(messages))

    def append_file(self, name: str, text: str) -> str:
        return self._call("append_file", lambda: self.inner.append_file(name, text))

    def issued(self, path: str) -> bool:
        return self._call("issued", lambda: self.inner.issued(path))

    def read_text(self, path: str) -> str:
        return self._call("read_text", lambda: self.inner.read_text(path))

    def read_bytes(self, path: str) -> bytes:
        return self._call("read_bytes", lambda: self.inner.read_bytes(path))

    # -- the journal -------------------------------------------------------------------
    def create_session(self, meta: Meta) -> str:
        return self._call("create_session", lambda: self.inner.create_session(meta))

    def session_meta(self, session: str) -> Meta | None:
        return self._call("session_meta", lambda: self.inner.session_meta(session))

    def list_sessions(self) -> list[Meta]:
        return self._call("list_sessions", lambda: self.inner.list_sessions())

    def append(self, session: str, records: list[Record]) -> None:
        self._call("append", lambda: self.inner.append(session, records))

    def records(self, session: str) -> Iterator[Record]:
        return self._call("records", lambda: self.inner.records(session))

    def close(self) -> None:
        self.inner.close()


__all__ = ["FILES", "WRITES", "FaultyStore", "disk_full", "read_only"]
