"""FileStore: the Store protocol in plain files under one root.

Files the model opens follow the shared layout (``disk.py``). Besides them:

    <root>/.task_outputs/issued.txt                  ledger: one issued relative path a line
    <root>/.transcripts/sessions/<id>.meta.json      a session's meta, written once
    <root>/.transcripts/sessions/<id>.jsonl          its journal: one line per append

The ledger makes ``issued`` exact across restarts: a file that merely exists under root (left
by another program, or named in a tool's output) is not ours.

Journal invariants. One ``append`` is one line, ``{"batch": [records...]}\\n``, given to the
OS in a single ``write`` on a file opened with O_APPEND, so a killed process leaves every
batch whole or absent; only the last line can be torn (power loss, full disk). ``records``
ignores a last line that has no newline or is not valid JSON, and the first ``append`` of a
store to a session truncates it away first. Without ``durable=True`` nothing is fsynced: the
OS has every accepted write and a killed process loses nothing; with it, every write (and the
directory entry of a new file) is fsynced before the call returns.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .base import Record
from .disk import DiskFiles, append_bytes, fsync_dir, safe_id, write_all
from .journal import (
    CorruptJournal,
    SessionExists,
    check_records,
    dumps,
    new_meta,
    valid_session_id,
)

__all__ = ["FileStore", "safe_id"]

LEDGER = ".task_outputs/issued.txt"
SESSIONS = ".transcripts/sessions"


class FileStore(DiskFiles):
    def __init__(self, root: str | os.PathLike[str], durable: bool = False) -> None:
        super().__init__(root, durable)
        self.sessions_dir = self.root_path / SESSIONS
        self._ledger = self.root_path / LEDGER
        self._issued: set[str] = set()
        self._ledger_read = 0  # bytes of the ledger already in _issued
        self._repaired: set[str] = set()  # sessions whose torn tail this store has checked

    def __repr__(self) -> str:
        return f"FileStore({self.root!r})"

    # -- issued paths ----------------------------------------------------------------------------
    def _remember(self, rel: str, kind: str, data: bytes | None) -> None:
        if rel not in self._issued:
            append_bytes(self._ledger, f"{rel}\n".encode("ascii"), self.durable)
            self._issued.add(rel)

    def _known(self, rel: str) -> bool:
        if rel not in self._issued:
            self._read_ledger()
        return rel in self._issued

    def _read_ledger(self) -> None:
        # Another store on this root (another process, an earlier run) may have issued it.
        try:
            with open(self._ledger, "rb") as ledger:
                ledger.seek(self._ledger_read)
                text = ledger.read()
        except FileNotFoundError:
            return
        whole = text[: text.rfind(b"\n") + 1]  # a torn last line names no path
        self._issued.update(whole.decode("ascii", "replace").splitlines())
        self._ledger_read += len(whole)

    # -- the session journal ---------------------------------------------------------------------
    def _meta_path(self, session: str) -> Path:
        return self.sessions_dir / f"{session}.meta.json"

    def _journal_path(self, session: str) -> Path:
        return self.sessions_dir / f"{session}.jsonl"

    def _exists(self, session: str) -> bool:
        return valid_session_id(session) and self._meta_path(session).exists()

    def create_session(self, meta: dict[str, Any]) -> str:
        full = new_meta(meta)
        session: str = full["id"]
        self.sessions_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.sessions_dir / f".{session}.{uuid.uuid4().hex}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            try:
                write_all(fd, dumps(full).encode("ascii"))
                if self.durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            # A hard link claims the name atomically: it fails if the session exists.
            os.link(tmp, self._meta_path(session))
        except FileExistsError:
            raise SessionExists(f"session {session!r} already exists in {self.root}") from None
        finally:
            tmp.unlink(missing_ok=True)
        if self.durable:
            fsync_dir(self.sessions_dir)
        return session

    def session_meta(self, session: str) -> dict[str, Any] | None:
        if not valid_session_id(session):
            return None
        try:
            meta: dict[str, Any] = json.loads(self._meta_path(session).read_bytes())
        except FileNotFoundError:
            return None
        return meta

    def list_sessions(self) -> list[dict[str, Any]]:
        metas = []
        for path in self.sessions_dir.glob("*.meta.json"):
            try:
                metas.append(json.loads(path.read_bytes()))
            except FileNotFoundError:
                continue
        return sorted(metas, key=lambda m: (str(m.get("created", "")), m["id"]), reverse=True)

    def append(self, session: str, records: list[Record]) -> None:
        check_records(records)
        if session not in self._repaired:
            if not self._exists(session):
                raise KeyError(f"no session {session!r} in {self.root}")
            _cut_torn_tail(self._journal_path(session))
            self._repaired.add(session)
        if not records:
            return
        line = f'{{"batch":{dumps(records)}}}\n'.encode("ascii")
        try:
            append_bytes(self._journal_path(session), line, self.durable)
        except BaseException:
            # A failed write may have left part of the line: check the tail again next time.
            self._repaired.discard(session)
            raise

    def records(self, session: str) -> Iterator[Record]:
        if not self._exists(session):
            raise KeyError(f"no session {session!r} in {self.root}")
        path = self._journal_path(session)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return iter(())
        lines = data.split(b"\n")[:-1]  # the piece after the last newline is torn or empty
        out: list[Record] = []
        for number, line in enumerate(lines, 1):
            batch = _batch(line)
            if batch is None:
                if number == len(lines):
                    break  # a torn last line: that append never completed
                raise CorruptJournal(f"{path}: line {number} is not a whole batch")
            out.extend(batch)
        return iter(out)

    def close(self) -> None:
        # Every file is opened and closed within one call: nothing is held between calls.
        pass


def _batch(line: bytes) -> list[Record] | None:
    try:
        batch = json.loads(line)["batch"]
    except (ValueError, KeyError, TypeError):
        return None
    return batch if isinstance(batch, list) else None


def _cut_torn_tail(path: Path) -> None:
    """Truncate a last line that is not a whole batch (no newline, or not valid JSON)."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return
        start = _last_line_start(fd, size)
        tail = os.pread(fd, size - start, start)
        if tail.endswith(b"\n") and _batch(tail) is not None:
            return
        os.ftruncate(fd, start)
    finally:
        os.close(fd)


def _last_line_start(fd: int, size: int) -> int:
    """Offset just after the newline before the last line (0 when there is none)."""
    end = size - 1  # the last byte may itself be the last line's newline
    chunk = 1 << 16
    while end > 0:
        begin = max(0, end - chunk)
        found = os.pread(fd, end - begin, begin).rfind(b"\n")
        if found >= 0:
            return begin + found + 1
        end = begin
    return 0
