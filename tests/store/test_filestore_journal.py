"""FileStore's journal on disk: one line per append, a torn last line ignored and cut away."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from store_helpers import turn, whole_turns

from context_compact.store import CorruptJournal, FileStore


def journal_of(store: FileStore, session: str) -> Path:
    return store.sessions_dir / f"{session}.jsonl"


def test_one_append_is_one_line_holding_the_batch(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    session = store.create_session({})
    store.append(session, turn(0))
    store.append(session, turn(1))
    lines = journal_of(store, session).read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 3
    batches = [json.loads(line) for line in lines[:2]]
    assert [b["batch"] for b in batches] == [turn(0), turn(1)]
    assert all(len(b["link"]) == 32 for b in batches)  # the hash chain (witness.py)
    assert journal_of(store, session).read_bytes().isascii()


def test_meta_is_a_json_file_beside_the_journal(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    session = store.create_session({"engine": "e"})
    meta = json.loads((store.sessions_dir / f"{session}.meta.json").read_text(encoding="ascii"))
    assert meta == store.session_meta(session)


@pytest.mark.parametrize(
    "torn",
    [b'{"batch":[{"kind":"ev', b'{"batch":[{"kind":"event"}]}', b"\x00\x00\x00\x00\n", b"{oops}\n"],
    ids=["half_a_line", "no_newline", "zeros", "not_json"],
)
def test_a_torn_last_line_is_ignored_then_cut_away_by_the_next_append(
    tmp_path: Path, torn: bytes
) -> None:
    store = FileStore(tmp_path)
    session = store.create_session({})
    store.append(session, turn(0))
    store.append(session, turn(1))
    with journal_of(store, session).open("ab") as journal:
        journal.write(torn)
    assert whole_turns(list(store.records(session))) == 2
    restarted = FileStore(tmp_path)
    assert whole_turns(list(restarted.records(session))) == 2
    restarted.append(session, turn(2))
    assert whole_turns(list(restarted.records(session))) == 3
    assert journal_of(store, session).read_bytes().count(b"\n") == 3


def test_a_journal_that_is_only_a_torn_line_is_empty(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    session = store.create_session({})
    journal_of(store, session).write_bytes(b'{"batch":[{"ki')
    assert list(store.records(session)) == []
    FileStore(tmp_path).append(session, turn(0))
    assert whole_turns(list(store.records(session))) == 1


def test_a_broken_line_before_the_last_is_reported_not_skipped(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    session = store.create_session({})
    store.append(session, turn(0))
    journal = journal_of(store, session)
    journal.write_bytes(b"garbage\n" + journal.read_bytes())
    with pytest.raises(CorruptJournal, match="line 1"):
        store.records(session)


def test_a_durable_store_gives_the_same_journal(tmp_path: Path) -> None:
    store = FileStore(tmp_path, durable=True)
    session = store.create_session({})
    store.append(session, turn(0))
    path = store.save_blob("x")
    assert whole_turns(list(FileStore(tmp_path).records(session))) == 1
    assert FileStore(tmp_path).read_text(path) == "x"


def test_the_seeds_folders_hold_only_the_seeds_files(tmp_path: Path) -> None:
    # The seed's tests list .transcripts and tool-results: our bookkeeping lives elsewhere.
    store = FileStore(tmp_path)
    store.save_tool_result("t", "x")
    store.write_transcript([{"role": "user", "content": "x"}])
    assert [p.name for p in store.results_dir.iterdir()] == ["t.txt"]
    assert [p.name.startswith("transcript_") for p in store.transcripts_dir.iterdir()] == [True]
