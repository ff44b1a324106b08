"""Issue 18: a journal that lost its tail or was altered is reported, never silently resumed
from an earlier point (FileStore lines, SQLite rows and WAL; witness.py)."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest
from store_helpers import big_text, turn, whole_turns

from context_compact import Compactor, Policy
from context_compact.session.recall import recall
from context_compact.store import CorruptJournal, FileStore, SqliteStore
from sqlite_rows import tamper_record

TURNS = 29


def filled_files(tmp_path: Path) -> tuple[FileStore, str, Path]:
    store = FileStore(tmp_path)
    session = store.create_session({})
    for n in range(TURNS):
        store.append(session, turn(n, size=300))
    return store, session, store.sessions_dir / f"{session}.jsonl"


def test_a_filestore_journal_cut_in_half_is_reported_not_resumed_earlier(tmp_path: Path) -> None:
    _, session, journal = filled_files(tmp_path)
    data = journal.read_bytes()
    journal.write_bytes(data[: len(data) // 2])
    again = FileStore(tmp_path)
    with pytest.raises(CorruptJournal, match=f"{TURNS} were written: its tail was cut") as found:
        list(again.records(session))
    assert found.value.session == session and 0 < found.value.whole < TURNS
    with pytest.raises(CorruptJournal):
        again.append(session, turn(TURNS))  # never appended after a cut
    assert journal.read_bytes() == data[: len(data) // 2]


def test_bytes_altered_inside_a_logged_message_are_found_and_recall_refuses_them(
    tmp_path: Path,
) -> None:
    store = FileStore(tmp_path)
    c = Compactor(Policy.default(), store)
    history = [{"role": "user", "content": "the original request, word for word"}]
    c.prepare(history, "the original request")
    sid = c.session_id
    assert sid is not None
    journal = store.sessions_dir / f"{sid}.jsonl"
    journal.write_bytes(journal.read_bytes().replace(b"word for word", b"WORD for word"))
    with pytest.raises(CorruptJournal, match="line 1 is not what was written"):
        recall(FileStore(tmp_path), sid, "original")


def test_a_torn_last_line_the_witness_does_not_count_is_still_an_unfinished_append(
    tmp_path: Path,
) -> None:
    _, session, journal = filled_files(tmp_path)
    with journal.open("ab") as handle:
        handle.write(b'{"batch":[{"kind":"ev')
    assert whole_turns(list(FileStore(tmp_path).records(session)), size=300) == TURNS


def filled_sqlite(tmp_path: Path) -> tuple[SqliteStore, str, Path]:
    store = SqliteStore(tmp_path / "live" / "s.db")
    session = store.create_session({})
    for n in range(TURNS):
        store.append(session, turn(n, size=2_000))
    return store, session, tmp_path / "live"


def killed_copy(live: Path, to: Path) -> Path:
    """The database, its WAL and its witnesses as a SIGKILL would leave them (the live store
    never checkpointed: every commit of the test is in the WAL)."""
    shutil.copytree(live, to)
    return to / "s.db"


@pytest.mark.parametrize("damage", ["cut in half", "flipped bytes"])
def test_a_damaged_sqlite_wal_is_reported_not_resumed_earlier(tmp_path: Path, damage: str) -> None:
    store, session, live = filled_sqlite(tmp_path)
    db = killed_copy(live, tmp_path / "copy")
    wal = Path(f"{db}-wal")
    data = bytearray(wal.read_bytes())
    assert len(data) > 100_000
    if damage == "cut in half":
        data = data[: len(data) // 2]
    else:
        middle = len(data) // 2
        data[middle : middle + 64] = bytes(b ^ 0xFF for b in data[middle : middle + 64])
    wal.write_bytes(bytes(data))
    store.close()
    damaged = SqliteStore(db)
    with pytest.raises(CorruptJournal, match="tail was cut or rolled back") as found:
        list(damaged.records(session))
    assert 0 < found.value.whole < TURNS * 3
    damaged.close()


def test_an_altered_sqlite_row_and_an_altered_blob_are_found(tmp_path: Path) -> None:
    store, session, live = filled_sqlite(tmp_path)
    store.close()
    tamper_record(live / "s.db", session, 4, lambda body: body.replace("clear", "CLEAR"))
    with pytest.raises(CorruptJournal, match="record 4 was altered") as found:
        list(SqliteStore(live / "s.db").records(session))
    assert found.value.whole == 4
    tamper_record(live / "s.db", session, 4, lambda body: body.replace("CLEAR", "clear"))
    db = sqlite3.connect(live / "s.db")
    text = big_text(7, 2_000).encode("utf-8", "surrogatepass")
    # Stored compressed (sqlite_blobs.py): the row is found by the hash of its text.
    altered = (text.upper(), hashlib.sha256(text).hexdigest())
    db.execute("UPDATE blobs SET body = ?, codec = NULL WHERE hash = ?", altered)
    db.commit()
    db.close()
    with pytest.raises(CorruptJournal, match="a text of record 21 is altered"):
        list(SqliteStore(live / "s.db").records(session))
