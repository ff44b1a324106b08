"""A symbolic link planted where a store keeps its own files is refused, never followed: not
read as this store's session, not written into (``nofollow.py``, ``LinkRefused``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from context_compact.cli import main
from context_compact.errors import LinkRefused
from context_compact.store import FileStore, SqliteStore

SESSIONS = Path(".transcripts/sessions")


def other_project(tmp_path: Path) -> tuple[Path, str]:
    """Another project's FileStore with one session of one batch."""
    root = tmp_path / "other"
    store = FileStore(root)
    session = store.create_session({"id": "theirs"})
    store.append(session, [{"kind": "event", "secret": "their words"}])
    store.close()
    return root, session


def test_a_filestore_journal_linked_to_another_projects_is_refused_not_resumed(
    tmp_path: Path,
) -> None:
    other, session = other_project(tmp_path)
    mine = tmp_path / "mine"
    (mine / SESSIONS).mkdir(parents=True)
    for suffix in (".meta.json", ".jsonl", ".head"):
        (mine / SESSIONS / f"{session}{suffix}").symlink_to(other / SESSIONS / f"{session}{suffix}")
    store = FileStore(mine)
    try:
        for read in (
            lambda: store.session_meta(session),
            lambda: list(store.records(session)),
            lambda: store.list_sessions(),
            lambda: store.append(session, [{"kind": "event"}]),
            lambda: list(store.search(session, "their words")),
        ):
            with pytest.raises(LinkRefused, match=r"symbolic link.*never followed"):
                read()
    finally:
        store.close()
    assert len((other / SESSIONS / f"{session}.jsonl").read_bytes().splitlines()) == 1


def test_only_the_journal_linked_is_refused_too(tmp_path: Path) -> None:
    other, session = other_project(tmp_path)
    store = FileStore(tmp_path / "mine")
    store.create_session({"id": session})
    journal = tmp_path / "mine" / SESSIONS / f"{session}.jsonl"
    journal.symlink_to(other / SESSIONS / f"{session}.jsonl")
    try:
        with pytest.raises(LinkRefused) as refused:
            list(store.records(session))
        assert str(journal) in str(refused.value) and "\n" not in str(refused.value)
    finally:
        store.close()


def test_a_sessions_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    other, _ = other_project(tmp_path)
    mine = tmp_path / "mine"
    (mine / ".transcripts").mkdir(parents=True)
    (mine / SESSIONS).symlink_to(other / SESSIONS, target_is_directory=True)
    store = FileStore(mine)
    try:
        with pytest.raises(LinkRefused, match="folder"):
            store.list_sessions()
        with pytest.raises(LinkRefused):
            store.session_meta("theirs")
    finally:
        store.close()


def test_a_linked_issued_ledger_is_refused(tmp_path: Path) -> None:
    other, _ = other_project(tmp_path)
    theirs = FileStore(other)
    path = theirs.save_blob("their tool output")
    theirs.close()
    mine = tmp_path / "mine"
    (mine / ".task_outputs").mkdir(parents=True)
    (mine / ".task_outputs/issued.txt").symlink_to(other / ".task_outputs/issued.txt")
    store = FileStore(mine)
    try:
        with pytest.raises(LinkRefused):
            store.issued(str(mine / Path(path).relative_to(other)))
    finally:
        store.close()


@pytest.mark.parametrize("suffix", ["", "-wal", "-journal"])
def test_a_sqlite_database_or_its_wal_planted_as_a_link_is_refused(
    tmp_path: Path, suffix: str
) -> None:
    elsewhere = SqliteStore(tmp_path / "elsewhere" / "sessions.db")
    elsewhere.create_session({"id": "theirs"})
    elsewhere.close()
    work = tmp_path / "work"
    db = work / ".context-compact" / "sessions.db"
    db.parent.mkdir(parents=True)
    if suffix:
        SqliteStore(db, root=work).close()
    Path(f"{db}{suffix}").symlink_to(Path(f"{tmp_path / 'elsewhere' / 'sessions.db'}{suffix}"))
    with pytest.raises(LinkRefused) as refused:
        SqliteStore(db, root=work)
    assert f"{db}{suffix}" in str(refused.value)


def test_a_store_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    SqliteStore(elsewhere / "sessions.db").close()
    work = tmp_path / "work"
    work.mkdir()
    (work / ".context-compact").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(LinkRefused, match="folder"):
        SqliteStore(work / ".context-compact" / "sessions.db", root=work)


def test_a_linked_sessions_db_is_neither_listed_nor_imported_into_by_the_cli(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log.json"
    log.write_text(json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-8")
    other, work = tmp_path / "other", tmp_path / "work"
    other.mkdir()
    work.mkdir()
    runner = CliRunner()
    assert runner.invoke(main, ["import", str(log), "--workdir", str(other)]).exit_code == 0
    target = other / ".context-compact" / "sessions.db"
    before = target.read_bytes(), sorted(os.listdir(target.parent))
    (work / ".context-compact").mkdir()
    planted = work / ".context-compact" / "sessions.db"
    planted.symlink_to(target)
    for args in (["sessions"], ["import", str(log)], ["doctor"], ["export", "x"]):
        result = runner.invoke(main, [*args, "--workdir", str(work)])
        assert result.exit_code == 1, (args, result.output)
        assert "Traceback" not in result.output
        (line,) = result.stderr.splitlines()
        assert str(planted) in line and "symbolic link" in line, line
    assert (target.read_bytes(), sorted(os.listdir(target.parent))) == before
