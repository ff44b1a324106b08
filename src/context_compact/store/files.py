"""FileStore: the Store protocol in plain files under one root.

Files the model opens follow the shared layout (``disk.py``). Besides them:

    <root>/.task_outputs/issued.txt                  ledger: one issued relative path a line
    <root>/.transcripts/sessions/<id>.meta.json      a session's meta, written once
    <root>/.transcripts/sessions/<id>.jsonl          its journal: one line per append
    <root>/.transcripts/sessions/<id>.lock           its writer's lease (pid, host), flocked
    <root>/.transcripts/sessions/<id>.head           its witness: lines written, last link

The ledger makes ``issued`` exact across restarts: a file that merely exists under root (left
by another program, or named in a tool's output) is not ours.

Journal invariants. One ``append`` is one line, ``{"batch": [records...],"link": H}\\n``,
given to the OS in a single ``write`` on a file opened with O_APPEND, so a killed process
leaves every batch whole or absent; only the last line can be torn (power loss, full disk).
``H`` chains the line to the one before (``witness.link`` of the previous link and the
batch's JSON), and after each append ``<id>.head`` records how many lines were written and
the last link (``witness.py``). ``records`` checks every link and the witness: a line that is
not what was written, or a journal shorter than the witness says (cut, rolled back), is
``CorruptJournal`` naming the line, never a silent resume from an earlier turn. A torn last
line the witness does not count (an append that never completed) is ignored, and the first
``append`` of a store to a session truncates it away first. Without ``durable=True`` nothing
is fsynced: the OS has every accepted write and a killed process loses nothing; with it,
every write (and the directory entry of a new file) is fsynced before the call returns.

One writer per session (``lease.py``): the first append of a store to a session takes an
exclusive ``flock`` on its ``.lock`` file, held until ``close`` (the kernel releases it when
the process dies, SIGKILL included), and writes its pid and host there for the error another
process gets. Another object of the same process may write too (the lease is the
process's). An append to a journal that grew since this store read or wrote it is refused.
Where ``fcntl`` does not exist (Windows) there is no lease, only that length check.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import witness
from .base import Record
from .disk import (
    DiskFiles,
    append_bytes,
    folder_mode,
    fsync_dir,
    make_dirs,
    safe_id,
    write_all,
)
from .file_search import FileSearch
from .journal import (
    CorruptJournal,
    SessionExists,
    check_records,
    dumps,
    new_meta,
    valid_session_id,
)
from .lease import (
    Owner,
    SessionLocked,
    changed_message,
    locked_message,
    same_process,
    this_process,
)
from .search import SideIndex

__all__ = ["FileStore", "safe_id"]

LEDGER = ".task_outputs/issued.txt"
SESSIONS = ".transcripts/sessions"


class FileStore(DiskFiles, FileSearch):
    def __init__(
        self, root: str | os.PathLike[str], durable: bool = False, private: bool = True
    ) -> None:
        super().__init__(root, durable, private)
        self.sessions_dir = self.root_path / SESSIONS
        self._ledger = self.root_path / LEDGER
        self._issued: set[str] = set()
        self._ledger_read = 0  # bytes of the ledger already in _issued
        self._repaired: set[str] = set()  # sessions whose torn tail this store has checked
        self._sizes: dict[str, int] = {}  # journal bytes last read or written, per session
        self._locks: dict[str, int] = {}  # session -> fd of its flocked lock file
        self._heads: dict[str, tuple[int, str]] = {}  # lines and last link, per session
        self._index: SideIndex | None = None  # the search index, opened by the first search

    def __repr__(self) -> str:
        return f"FileStore({self.root!r})"

    # -- issued paths ----------------------------------------------------------------------------
    def _remember(self, rel: str, kind: str, data: bytes | None) -> None:
        if rel not in self._issued:
            ledger = self.inside(LEDGER)
            append_bytes(ledger, f"{rel}\n".encode("ascii"), self.durable, self.file_mode)
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

    def _lock_path(self, session: str) -> Path:
        return self.sessions_dir / f"{session}.lock"

    def _head_path(self, session: str) -> Path:
        return self.sessions_dir / f"{session}.head"

    def _exists(self, session: str) -> bool:
        return valid_session_id(session) and self._meta_path(session).exists()

    def create_session(self, meta: dict[str, Any]) -> str:
        full = new_meta(meta)
        session: str = full["id"]
        make_dirs(self.sessions_dir, folder_mode(self.file_mode))
        self.inside(f"{SESSIONS}/{session}.meta.json")
        tmp = self.sessions_dir / f".{session}.{uuid.uuid4().hex}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, self.file_mode)
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
        self._sizes[session] = 0
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
            self.claim(session)
            known = self._sizes.get(session)
            self._load(session)  # verified first: never append after a cut or altered tail
            if known is not None and known != self._sizes[session]:
                found, self._sizes[session] = self._sizes[session], known
                raise SessionLocked(changed_message(session, self.root, known, found))
            _cut_to(self._journal_path(session), self._sizes[session])
            self._repaired.add(session)
        if not records:
            return
        count, head = self._heads.get(session) or self._load(session)[1]
        batch = dumps(records).encode("ascii")
        link = witness.link(head, batch)
        line = (b'{"batch":', batch, b',"link":"' + link.encode("ascii") + b'"}\n')
        length = sum(map(len, line))
        path = self.inside(f"{SESSIONS}/{session}.jsonl")
        size = _size(path)
        known = self._sizes.get(session)
        if known is not None and known != size:
            raise SessionLocked(changed_message(session, self.root, known, size))
        try:
            append_bytes(path, line, self.durable, self.file_mode)
        except BaseException:
            # A failed write may have left part of the line: check the tail again next time.
            self._repaired.discard(session)
            self._sizes.pop(session, None)
            raise
        self._sizes[session] = size + length
        self._heads[session] = (count + 1, link)
        witness.write(self._head_path(session), count + 1, link, self.durable, self.file_mode)

    def claim(self, session: str) -> None:
        """Take the session's lease (``SessionLocked`` if another live process holds it)."""
        if session in self._locks:
            return
        if not self._exists(session):
            raise KeyError(f"no session {session!r} in {self.root}")
        try:
            import fcntl
        except ImportError:  # no flock here: the length check alone guards the journal
            return
        self.inside(f"{SESSIONS}/{session}.lock")
        fd = os.open(
            self._lock_path(session), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, self.file_mode
        )
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = self._owner(fd)
                if owner is not None and same_process(owner):
                    os.close(fd)  # another store object of this process holds it
                    return
                raise SessionLocked(
                    locked_message(session, owner or Owner(0, "?", ""), self.root)
                ) from None
            me = this_process()
            os.ftruncate(fd, 0)
            os.pwrite(fd, dumps(me.as_dict()).encode("ascii"), 0)
        except BaseException:
            os.close(fd)
            raise
        self._locks[session] = fd

    def writer(self, session: str) -> Owner | None:
        """The live process holding the session's lease, if any."""
        try:
            import fcntl
        except ImportError:
            return None
        try:
            fd = os.open(self._lock_path(session), os.O_RDWR)
        except FileNotFoundError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return self._owner(fd) or Owner(0, "?", "")
            return None
        finally:
            os.close(fd)  # closing drops a lock taken just now

    @staticmethod
    def _owner(fd: int) -> Owner | None:
        try:
            return Owner.from_dict(json.loads(os.pread(fd, 4096, 0) or b"null"))
        except (ValueError, TypeError, AttributeError):
            return None

    def records(self, session: str) -> Iterator[Record]:
        return iter(self._load(session)[0])

    def _load(self, session: str) -> tuple[list[Record], tuple[int, str]]:
        """The session's records and (lines, last link), every line and the witness checked."""
        if not self._exists(session):
            raise KeyError(f"no session {session!r} in {self.root}")
        path = self._journal_path(session)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            data = b""
        lines = data.split(b"\n")[:-1]  # the piece after the last newline is torn or empty
        out: list[Record] = []
        links: list[str] = []
        head = witness.ROOT
        whole = 0
        for number, line in enumerate(lines, 1):
            batch, stored, raw = _batch(line)
            altered = False
            if batch is not None:
                head = witness.link(head, raw)
                altered = stored is not None and stored != head
            if batch is None or altered:
                if number == len(lines) and not altered:
                    break  # a torn last line: that append never completed (or see the witness)
                raise CorruptJournal(
                    f"{path}: line {number} is not what was written (not a whole batch, or "
                    f"its hash chain differs); the {number - 1} lines before it are whole",
                    session,
                    number - 1,
                    number - 1,
                    "line",
                )
            out.extend(batch)
            links.append(head)
            whole += len(line) + 1
        witness.verify(session, str(path), links, witness.read(self._head_path(session)), "line")
        self._sizes[session] = whole
        self._heads[session] = (len(links), head)
        return out, (len(links), head)

    def _parse(self, line: bytes) -> list[Record] | None:
        return _batch(line)[0]

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
        # Journal files are opened and closed within one call; only the leases are held.
        for fd in self._locks.values():
            os.close(fd)  # releases the flock
        self._locks.clear()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


_LINK_TAIL = len(b',"link":""}') + 32


def _batch(line: bytes) -> tuple[list[Record] | None, str | None, bytes]:
    """A line's batch (None unless whole), its stored link (None in a line written before
    links) and the batch's JSON bytes (what the link hashes)."""
    stored = None
    raw = line[len(b'{"batch":') : -1]
    if line.endswith(b'"}') and line[-_LINK_TAIL:].startswith(b',"link":"'):
        stored = line[-_LINK_TAIL + len(b',"link":"') : -2].decode("ascii", "replace")
        raw = line[len(b'{"batch":') : -_LINK_TAIL]
    try:
        parsed = json.loads(line)
        batch = parsed["batch"]
    except (ValueError, KeyError, TypeError, RecursionError):
        return None, None, raw
    if not isinstance(batch, list) or not line.startswith(b'{"batch":'):
        return None, None, raw
    if stored is not None and parsed.get("link") != stored:
        return None, None, raw
    return batch, stored, raw


def _cut_to(path: Path, whole: int) -> None:
    """Truncate what follows the ``whole`` bytes of verified lines (a torn last line)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    except FileNotFoundError:
        return
    try:
        if os.fstat(fd).st_size > whole:
            os.ftruncate(fd, whole)
    finally:
        os.close(fd)
