"""A FileStore's session files damaged between two calls: every file of the session deleted,
cut, overwritten with garbage or replaced by a symbolic link, then the next call and a fresh
resume. Either the session goes on with the view it would have had, or the call and the
resume are refused in one line that names the cause (a link, a lost meta file, a journal cut
behind the store): never an empty session, never another view, never a traceback of ours."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from context_compact import Compactor, Policy
from context_compact.errors import CorruptJournal, CorruptStore, LinkRefused, StoreError
from context_compact.session import checkpoint
from context_compact.store import FileStore
from context_compact.store.lease import SessionLocked
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session

SUFFIXES = (".meta.json", ".jsonl", ".head", ".marks", ".lock")
DAMAGES = ("delete", "truncate", "garbage", "link")


def _compactor(root: Path) -> Compactor:
    policy = Policy.default(context_limit=5000)
    return Compactor(policy, FileStore(root), BenchSummarizer(), session="s")


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "delete":
        path.unlink()
    elif how == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        path.write_bytes(b"\x00garbage\n" * 3)
    else:
        elsewhere = path.parent.parent / f"elsewhere{path.suffix}"
        elsewhere.write_bytes(data)
        path.unlink()
        path.symlink_to(elsewhere)


def _between_two_calls(root: Path, damage: Callable[[], None]) -> tuple[Any, Any, Any]:
    w = synthetic_session(6, seed=3)
    c = _compactor(root)
    view = c.prepare([{"role": "user", "content": w.request}], w.request)
    for t in w.turns[:-1]:
        view = c.prepare([*view, t.assistant, t.results], w.request)
    damage()
    t = w.turns[-1]
    nxt: Any
    try:
        nxt = c.prepare([*view, t.assistant, t.results], w.request)
    except StoreError as error:
        nxt = error
    try:
        again: Any = _compactor(root).view()
    except StoreError as error:
        again = error
    return view, nxt, again


def _one_line(error: BaseException) -> bool:
    return "\n" not in str(error) and "Traceback" not in str(error)


@pytest.mark.parametrize("how", DAMAGES)
@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_damaged_session_file_between_two_calls_goes_on_or_is_refused_naming_its_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str, how: str
) -> None:
    monkeypatch.setattr(checkpoint, "EVERY", 3)
    path = tmp_path / ".transcripts" / "sessions" / f"s{suffix}"
    view, nxt, again = _between_two_calls(tmp_path, lambda: _damage(path, how))
    for outcome in (nxt, again):
        if isinstance(outcome, BaseException):
            assert _one_line(outcome), outcome
            if how == "link":
                assert isinstance(outcome, LinkRefused) and str(path) in str(outcome)
    if isinstance(again, list):
        # Resumed: exactly the view the session sends next, or (the call refused) the last.
        expected = nxt if isinstance(nxt, list) else view
        assert json.dumps(again) == json.dumps(expected)
    if suffix == ".meta.json" and how == "delete":
        assert isinstance(again, CorruptStore) and "meta file of session 's' is lost" in str(again)
    if suffix == ".jsonl" and how != "link":
        assert isinstance(nxt, SessionLocked) and "another process" not in str(nxt)
        assert "cut or replaced" in str(nxt)
        assert isinstance(again, CorruptJournal)


def test_a_journal_whose_meta_file_was_lost_is_refused_not_resumed_empty(tmp_path: Path) -> None:
    c = _compactor(tmp_path)
    c.prepare([{"role": "user", "content": "alpha words"}], "alpha words")
    meta = tmp_path / ".transcripts" / "sessions" / "s.meta.json"
    meta.unlink()
    with pytest.raises(CorruptStore) as raised:
        _compactor(tmp_path)
    assert str(meta) in str(raised.value) and "is lost" in str(raised.value)
    assert not meta.exists()  # nothing was made in its place
    store = FileStore(tmp_path)
    assert [session for session, _ in store.lost_metas()] == ["s"]
    assert store.list_sessions() == []


def test_doctor_names_a_journal_whose_meta_file_was_lost(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from context_compact.cli import main

    _compactor(tmp_path).prepare([{"role": "user", "content": "alpha"}], "alpha")
    _compactor(tmp_path / "x").prepare([{"role": "user", "content": "beta"}], "beta")
    os.replace(tmp_path / "x" / ".transcripts" / "sessions" / "s.jsonl", tmp_path / "b.jsonl")
    (tmp_path / ".transcripts" / "sessions" / "s.meta.json").unlink()
    result = CliRunner().invoke(main, ["doctor", "--store", f"file://{tmp_path}"])
    assert result.exit_code == 1
    assert "s: DAMAGED:" in result.output and "meta file of session 's' is lost" in result.output
    assert "0 of 1 sessions ok" in result.output


def test_another_writers_append_is_counted_in_records_not_bytes(tmp_path: Path) -> None:
    mine, theirs = FileStore(tmp_path), FileStore(tmp_path)
    session = mine.create_session({"id": "s"})
    record = {"kind": "note", "text": "x" * 100}
    mine.append(session, [record, record])
    theirs.sessions._locks = mine.sessions._locks  # the same process: the lease lets both write
    theirs.append(session, [record, record, record])
    with pytest.raises(SessionLocked) as raised:
        mine.append(session, [record])
    assert "(5 records, 2 known here)" in str(raised.value)


def test_a_link_in_place_of_the_journal_is_refused_as_a_link(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    session = store.create_session({"id": "s"})
    store.append(session, [{"kind": "note", "text": "one"}])
    _damage(tmp_path / ".transcripts" / "sessions" / "s.jsonl", "link")
    with pytest.raises(LinkRefused) as raised:
        store.append(session, [{"kind": "note", "text": "two"}])
    assert "symbolic link" in str(raised.value) and "s.jsonl" in str(raised.value)
