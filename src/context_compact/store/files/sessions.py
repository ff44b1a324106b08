"""FileStore's journal part: each session's meta, journal, witness, lease and checkpoint marks.

The files and their invariants are ``files/store.py``'s (the layout) and ``files/journal.py``'s
(one line per append, chained, checked against the witness on every read).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

from ...errors import CorruptJournal, CorruptStore
from .. import witness
from ..base import CHECKPOINT_KIND, Meta
from ..codec import Record, dumps, dumps_records
from ..disk import Root, append_bytes, folder_mode, fsync_dir, make_dirs, write_all
from ..journal import SessionExists, check_records, new_meta, valid_session_id
from ..lease import Owner, SessionLocked, changed_message
from ..nofollow import open_file, read_file
from . import journal as file_journal
from . import locks as file_locks
from . import marks as file_marks
from .journal import Checked, Tip

_BYTES = "bytes of journal"
SESSIONS = ".transcripts/sessions"


class FileJournal:
    """``base.Journal`` in files under ``root`` (``SESSIONS``), with ``delete_session``,
    ``writer`` and ``base.Checkpointed``."""

    def __init__(self, root: Root) -> None:
        self.folder = root
        self.root = root.name
        self.sessions_dir = root.path / SESSIONS
        self._repaired: set[str] = set()  # sessions whose torn tail this store has checked
        self.sizes: dict[str, int] = {}  # journal bytes last read or written, per session
        self._locks = file_locks.LockFiles(root.file_mode)  # the sessions' leases held
        self._heads: dict[str, tuple[int, str]] = {}  # lines and last link, per session
        self._counts: dict[str, int] = {}  # records in the journal, per session (with _heads)
        self._marks: dict[str, dict[int, Tip]] = {}  # checkpoint marks last read, per session

    # -- the session files -----------------------------------------------------------------------
    def _session_file(self, session: str, suffix: str) -> Path:
        """``<root>/.transcripts/sessions/<session><suffix>``, refused (``LinkRefused``) when
        a folder on the way is a symbolic link."""
        return self.folder.inside(f"{SESSIONS}/{session}{suffix}")

    def _session_files(self, session: str, *suffixes: str) -> list[Path]:
        """``_session_file`` of each suffix: they share the folder, checked once."""
        first = self._session_file(session, suffixes[0])
        return [first.with_name(f"{session}{suffix}") for suffix in suffixes]

    def _meta_path(self, session: str) -> Path:
        return self._session_file(session, ".meta.json")

    def journal_path(self, session: str) -> Path:
        return self._session_file(session, ".jsonl")

    def _lock_path(self, session: str) -> Path:
        return self._session_file(session, ".lock")

    def _head_path(self, session: str) -> Path:
        return self._session_file(session, ".head")

    def _marks_path(self, session: str) -> Path:
        return self._session_file(session, ".marks")

    def _exists(self, session: str) -> bool:
        return valid_session_id(session) and os.path.lexists(self._meta_path(session))

    def create_session(self, meta: Meta) -> str:
        session, full = new_meta(meta)
        make_dirs(self.sessions_dir, folder_mode(self.folder.file_mode))
        final = self._meta_path(session)
        lost = self.lost_meta(session)
        if lost is not None:  # never an empty session over a journal that is there
            raise CorruptStore(lost)
        tmp = self.sessions_dir / f".{session}.{uuid.uuid4().hex}.tmp"
        fd = open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, self.folder.file_mode)
        try:
            try:
                write_all(fd, dumps(full).encode("ascii"))
                if self.folder.durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            # A hard link claims the name atomically: it fails if the session exists.
            os.link(tmp, final)
        except FileExistsError:
            raise SessionExists(f"session {session!r} already exists in {self.root}") from None
        finally:
            tmp.unlink(missing_ok=True)
        if self.folder.durable:
            fsync_dir(self.sessions_dir)
        self.sizes[session] = 0
        return session

    def session_meta(self, session: str) -> Meta | None:
        if not valid_session_id(session):
            return None
        try:
            return self._read_meta(self._meta_path(session))
        except FileNotFoundError:
            return None

    def _read_meta(self, path: Path) -> Meta:
        data = read_file(path)
        try:
            meta = json.loads(data)
        except (ValueError, RecursionError) as error:
            meta = error
        if not isinstance(meta, dict) or not isinstance(meta.get("id"), str):
            what = f"not whole JSON ({meta})" if isinstance(meta, Exception) else "not a meta"
            raise CorruptStore(
                f"{path}: a session's meta file is {what}, {len(data):,} bytes; restore it "
                "from a backup, or move the session's files aside "
                f"({path.name.removesuffix('.meta.json')}.*) to use the others"
            )
        return meta

    def lost_meta(self, session: str) -> str | None:
        """One line saying that ``session``'s meta file is lost while its journal or
        witness is there (None when it is not so): such a session is refused, never taken
        for a new, empty one."""
        if not valid_session_id(session):
            return None
        meta, path, head = self._session_files(session, ".meta.json", ".jsonl", ".head")
        if os.path.lexists(meta) or not (os.path.lexists(path) or os.path.lexists(head)):
            return None
        held = f"its journal {path.name} holds {file_journal.size(path):,} bytes"
        if not os.path.lexists(path):
            held = f"its witness {head.name} is there (the journal is gone too)"
        return (
            f"{meta}: the meta file of session {session!r} is lost, and {held}; restore the "
            f"meta file from a backup, or move the session's files ({session}.*) aside"
        )

    def lost_metas(self) -> list[tuple[str, str]]:
        """Every session whose meta file is lost while its journal is there, with its line
        (``lost_meta``)."""
        self.folder.inside(f"{SESSIONS}/x")  # the sessions folder is no link
        found = []
        for path in sorted(self.sessions_dir.glob("*.jsonl")):
            session = path.name.removesuffix(".jsonl")
            line = self.lost_meta(session)
            if line is not None:
                found.append((session, line))
        return found

    def list_sessions(self) -> list[Meta]:
        self.folder.inside(f"{SESSIONS}/x")  # the sessions folder is no link
        metas = []
        for path in self.sessions_dir.glob("*.meta.json"):
            try:
                metas.append(self._read_meta(path))
            except FileNotFoundError:
                continue
        return sorted(metas, key=lambda m: (str(m.get("created", "")), m["id"]), reverse=True)

    def delete_session(self, session: str) -> None:
        """Remove the session's meta, journal and witness (``SessionLocked`` if another
        live process writes it). The files its views named stay: they may be shared."""
        self.claim(session)
        # The meta file last: a deletion cut short leaves a session, never a lost meta file.
        for suffix in (".jsonl", ".head", ".marks", ".meta.json"):
            self._session_file(session, suffix).unlink(missing_ok=True)
        self._session_file(session, ".lock").unlink(missing_ok=True)
        self._locks.release(session)
        if self.folder.durable:
            fsync_dir(self.sessions_dir)
        for known in (self.sizes, self._heads, self._counts, self._marks):
            known.pop(session, None)
        self._repaired.discard(session)

    def append(self, session: str, records: list[Record]) -> None:
        check_records(records)
        if session not in self._repaired:
            if not self._exists(session):
                raise KeyError(f"no session {session!r} in {self.root}")
            self.claim(session)
            known = self.sizes.get(session)
            known_records = self._counts.get(session)
            if not self._as_checked(session):
                self.load(session)  # verified first: never append after a cut or altered tail
                if known is not None and known != self.sizes[session]:
                    found, self.sizes[session] = self.sizes[session], known
                    grown = self._counts[session]
                    self._counts.pop(session, None)
                    raise self._changed(session, known, found, known_records, grown)
                file_journal.cut_to(self.journal_path(session), self.sizes[session])
            self._repaired.add(session)
        if not records:
            return
        if session not in self._heads or session not in self._counts:
            self.load(session)
        count, head = self._heads[session]
        before = self._counts[session]
        batch = dumps_records(records).encode("ascii")
        link = witness.link(head, batch)
        line = (b'{"batch":', batch, b',"link":"' + link.encode("ascii") + b'"}\n')
        length = sum(map(len, line))
        path, head_path, marks_path = self._session_files(session, ".jsonl", ".head", ".marks")
        size = file_journal.size(path)
        known = self.sizes.get(session)
        if known is not None and known != size:
            raise self._changed(session, known, size, before, None)
        try:
            append_bytes(path, line, self.folder.durable, self.folder.file_mode)
        except BaseException:
            # A failed write may have left part of the line: check the tail again next time.
            self._repaired.discard(session)
            self.sizes.pop(session, None)
            raise
        self.sizes[session] = size + length
        self._heads[session] = (count + 1, link)
        self._counts[session] = before + len(records)
        witness.write(head_path, count + 1, link, self.folder.durable, self.folder.file_mode)
        tip = Tip(size, count, head, before)
        file_marks.add(
            marks_path,
            [(before + i, tip) for i, r in enumerate(records) if r["kind"] == CHECKPOINT_KIND],
            self.folder.file_mode,
        )

    def _changed(
        self, session: str, known: int, found: int, records: int | None, now: int | None
    ) -> SessionLocked:
        """The refusal of an append to a journal of ``found`` bytes that this store knew at
        ``known`` bytes and ``records`` records (``now``: the records it holds, when read).
        A longer one was written by another process, its records counted; a shorter one was
        cut or replaced, which is no other writer's doing."""
        if found < known:
            return SessionLocked(
                f"session {session!r} in {self.root}: its journal is shorter than when this "
                f"store read it ({found:,} bytes, {known:,} then): it was cut or replaced "
                "behind the store. Nothing was appended; resuming it says what is whole"
            )
        if now is None and records is not None:
            lines = file_journal.read(self.journal_path(session), known).split(b"\n")[:-1]
            batches = [file_journal.batch_of(line)[0] for line in lines]
            now = records + sum(len(batch) for batch in batches if batch is not None)
        if records is None or now is None:
            return SessionLocked(changed_message(session, self.root, known, found, _BYTES))
        return SessionLocked(changed_message(session, self.root, records, now))

    def _as_checked(self, session: str) -> bool:
        """Whether this store object checked the session's journal as it is now: the length
        it knows (whole lines, no torn tail) and the witness at the head it knows."""
        head = self._heads.get(session)
        if head is None or session not in self._counts:
            return False
        if file_journal.size(self.journal_path(session)) != self.sizes.get(session):
            return False
        return witness.read(self._head_path(session)) == witness.Seen(*head)

    def claim(self, session: str) -> None:
        """Take the session's lease (``SessionLocked`` if another live process holds it)."""
        if session in self._locks:
            return
        if not self._exists(session):
            raise KeyError(f"no session {session!r} in {self.root}")
        self._locks.take(session, self._lock_path(session), self.root)

    def writer(self, session: str) -> Owner | None:
        """The live process holding the session's lease, if any."""
        return file_locks.writer(self._lock_path(session))

    def records(self, session: str) -> Iterator[Record]:
        return iter(self.load(session).records)

    def checkpoints(self, session: str) -> list[int]:
        if not self._exists(session):
            raise KeyError(f"no session {session!r} in {self.root}")
        self._marks[session] = file_marks.read(self._marks_path(session))
        return sorted(self._marks[session])

    def records_from(self, session: str, start: int) -> Iterator[Record]:
        """The records from position ``start`` on: from the line of a checkpoint this store
        found marked there, the chain checked from the link before that line up to the
        witness (``CorruptJournal`` when it does not reach it); from any other position, a
        full read."""
        tip = self._marks.get(session, {}).get(start)
        if tip is None or start == 0:
            return iter(self.load(session).records[start:])
        size = file_journal.size(self.journal_path(session))
        if tip.offset > size:  # a hint that cannot be right: never seek there
            raise CorruptStore(
                f"session {session!r} in {self.root}: the mark of the checkpoint at record "
                f"{start} points at byte {tip.offset:,}, past the journal's end ({size:,} bytes)"
            )
        checked = self.load(session, tip)
        if not checked.links:
            raise CorruptJournal(
                f"session {session!r} in {self.root}: no whole line at the checkpoint mark "
                f"of record {start}",
                session,
                tip.lines,
                0,
                "line",
            )
        return iter(checked.records[start - tip.records :])

    def load(self, session: str, start: Tip = file_journal.START) -> Checked:
        """The session's records and chain from ``start`` on, every line and the witness
        checked; the witness is read before the journal (``witness.settled``)."""
        if not self._exists(session):
            raise KeyError(f"no session {session!r} in {self.root}")
        path = self.journal_path(session)
        checked = witness.settled(
            self._head_path(session),
            lambda seen: file_journal.check(
                session, path, file_journal.read(path, start.offset), seen, start
            ),
        )
        self.sizes[session] = checked.size
        self._heads[session] = checked.head
        self._counts[session] = checked.count
        return checked

    def close(self) -> None:
        # Journal files are opened and closed within one call; only the leases are held.
        self._locks.close()


__all__ = ["SESSIONS", "FileJournal"]
