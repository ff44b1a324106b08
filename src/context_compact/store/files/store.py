"""FileStore: the Store protocol in plain files under one root.

Its parts: the archive (``archive.DiskArchive``) with its ledger of issued paths
(``files/ledger.py``), the journal (``files/sessions.py``) and its search (``files/search.py``).
Files the model opens follow the shared layout (``codec.py``). Besides them:

    <root>/.task_outputs/issued.txt                  ledger: issued relative paths, framed
    <root>/.transcripts/sessions/<id>.meta.json      a session's meta, written once
    <root>/.transcripts/sessions/<id>.jsonl          its journal: one line per append
    <root>/.transcripts/sessions/<id>.lock           its writer's lease (pid, host), flocked
    <root>/.transcripts/sessions/<id>.head           its witness: lines written, last link
    <root>/.transcripts/sessions/<id>.marks          where its checkpoints are (a hint)

The ledger makes ``issued`` exact across restarts: a file that merely exists under root (left
by another program, or named in a tool's output) is not ours. Its entries are framed
(``files/ledger.py``): one cut short by a full disk is skipped, never glued to the next.

No symbolic link is followed under root (``nofollow.py``): the store makes none, so a meta
file, journal, witness, lock or ledger that is one (or sits in a folder that is one) was
planted, and is ``LinkRefused`` naming it, never read as this store's session.

Journal invariants. One ``append`` is one line, ``{"batch": [records...],"link": H}\\n``,
given to the OS in a single ``write`` on a file opened with O_APPEND, so a killed process
leaves every batch whole or absent; only the last line can be torn (power loss, full disk).
``H`` chains the line to the one before (``witness.link`` of the previous link and the
batch's JSON), and after each append ``<id>.head`` records how many lines were written and
the last link (``witness.py``). ``records`` checks every link and the witness: a line that is
not what was written, or a journal shorter than the witness says (cut, rolled back), is
``CorruptJournal`` naming the line, never a silent resume from an earlier turn. A torn last
line the witness does not count (an append that never completed, or one in progress) is
ignored, and the first ``append`` of a store to a session truncates it away first (unless
this store object checked the journal as it is now: same length, the witness at its head). A
resume reads from the newest checkpoint's line (``files/marks.py``; ``store.base.Checkpointed``),
the chain from the link before it checked up to the witness. A reader
reads the witness before the journal (``witness.settled``), so an append landing meanwhile
is never taken for a cut tail. Without ``durable=True`` nothing
is fsynced: the OS has every accepted write and a killed process loses nothing; with it,
every write (and the directory entry of a new file) is fsynced before the call returns.

One writer per session (``store/lease.py``): the first append of a store to a session takes
its lease, an ``flock`` on its ``.lock`` file held until ``close`` (``files/locks.py``).
Another object of the same process may write too (the lease is the process's). An append to
a journal that grew since this store read or wrote it is refused. Where ``fcntl`` does not
exist (Windows) there is no lease, only that length check.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from ..archive import DiskArchive
from ..codec import Record, safe_id
from ..composed import Composed
from ..disk import Root
from ..lease import Owner
from .ledger import FileLedger
from .search import FileSearch
from .sessions import FileJournal

__all__ = ["FileStore", "safe_id"]


class FileStore(Composed):
    def __init__(
        self, root: str | os.PathLike[str], durable: bool = False, private: bool = True
    ) -> None:
        self._place(Root(root, durable, private))
        self.archive = DiskArchive(self.folder, FileLedger(self.folder))
        self.journal = self.sessions = FileJournal(self.folder)
        self.sessions_dir = self.sessions.sessions_dir
        self._search = FileSearch(self.sessions)

    def __repr__(self) -> str:
        return f"FileStore({self.root!r})"

    # -- besides the doors -----------------------------------------------------------------------
    def search(self, session: str, query: str) -> Iterator[Record]:
        return self._search.search(session, query)

    def delete_session(self, session: str) -> None:
        """Remove the session's meta, journal and witness (``SessionLocked`` if another
        live process writes it). The files its views named stay: they may be shared."""
        self.sessions.delete_session(session)

    def writer(self, session: str) -> Owner | None:
        """The live process holding the session's lease, if any."""
        return self.sessions.writer(session)

    def checkpoints(self, session: str) -> list[int]:
        return self.sessions.checkpoints(session)

    def records_from(self, session: str, start: int) -> Iterator[Record]:
        return self.sessions.records_from(session, start)

    def lost_meta(self, session: str) -> str | None:
        """One line saying that ``session``'s meta file is lost while its journal or witness
        is there (None when it is not so)."""
        return self.sessions.lost_meta(session)

    def lost_metas(self) -> list[tuple[str, str]]:
        """Every session whose meta file is lost while its journal is there, with its line."""
        return self.sessions.lost_metas()

    def close(self) -> None:
        self._search.close()
        self.sessions.close()
