"""Issue 18: readers name a damaged session and go on; ``doctor`` says what is whole; a file
that is not a database is one line naming it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner, Result

from context_compact import Compactor, Policy
from context_compact.cli import main
from context_compact.store import workdir_store
from histories import call, results, user
from sqlite_rows import tamper_record


def cli(*args: str, workdir: Path) -> Result:
    return CliRunner().invoke(main, [*args, "--workdir", str(workdir)])


def two_sessions(workdir: Path) -> tuple[str, str]:
    store = workdir_store(workdir)
    ids = []
    for tag in ("good", "bad"):
        c = Compactor(Policy.default(), store)
        history = [user(tag)]
        for n in range(3):
            history = c.prepare([*history, call(f"{tag}{n}"), results((f"{tag}{n}", "x"))], tag)
        assert c.session_id is not None
        ids.append(c.session_id)
    store.close()
    return ids[0], ids[1]


def damage(workdir: Path, session: str) -> None:
    """Delete one logged message behind the store's back."""
    tamper_record(workdir / ".context-compact" / "sessions.db", session, 2)


def test_sessions_inspect_and_export_name_a_damaged_session_and_the_others_stay_usable(
    tmp_path: Path,
) -> None:
    good, bad = two_sessions(tmp_path)
    damage(tmp_path, bad)
    listed = cli("sessions", "--json", workdir=tmp_path)
    assert listed.exit_code == 0, listed.output
    assert f"error: session {bad} cannot be read" in listed.stderr
    assert [row["id"] for row in json.loads(listed.stdout)] == [good]
    for command in ("inspect", "export"):
        refused = cli(command, bad, workdir=tmp_path)
        assert refused.exit_code == 1 and "Traceback" not in refused.output
        (line,) = refused.output.splitlines()
        assert f"session {bad} cannot be read" in line and "record 2 is missing" in line
        assert cli(command, good, workdir=tmp_path).exit_code == 0


def test_doctor_names_the_damaged_session_the_record_and_what_is_whole(tmp_path: Path) -> None:
    good, bad = two_sessions(tmp_path)
    assert cli("doctor", workdir=tmp_path).exit_code == 0
    damage(tmp_path, bad)
    result = cli("doctor", "--json", workdir=tmp_path)
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["integrity_check"] == "ok"
    rows = {row["id"]: row for row in report["sessions"]}
    assert rows[good]["ok"] and not rows[bad]["ok"]
    assert (rows[bad]["unit"], rows[bad]["at"], rows[bad]["whole"]) == ("record", 2, 2)
    text = cli("doctor", workdir=tmp_path).output
    assert f"{bad}: DAMAGED" in text and "recoverable: the first 2 records" in text


def test_doctor_finds_a_database_of_the_previous_layout_whole_once_upgraded(tmp_path: Path) -> None:
    # Made by the code before migration 0006 (scripts/make_old_sqlite_db.py).
    data = Path(__file__).parent.parent / "store" / "data"
    seen = json.loads((data / "layout-0005.json").read_text(encoding="ascii"))
    (tmp_path / ".context-compact").mkdir()
    shutil.copy(data / "layout-0005.db", tmp_path / ".context-compact" / "sessions.db")
    heads = tmp_path / ".context-compact" / "sessions.db-heads"
    shutil.copytree(data / "layout-0005.db-heads", heads)
    result = cli("doctor", "--json", workdir=tmp_path)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["integrity_check"] == "ok"
    assert report["sessions"] == [{"id": seen["session"], "ok": True, "records": seen["records"]}]
    damage(tmp_path, seen["session"])
    assert cli("doctor", workdir=tmp_path).exit_code == 1


def test_a_file_that_is_not_a_database_is_one_line_naming_it_for_every_command(
    tmp_path: Path,
) -> None:
    db = tmp_path / ".context-compact" / "sessions.db"
    db.parent.mkdir()
    db.write_bytes(b"not a database at all, " * 100)
    log = tmp_path / "log.json"
    log.write_text('[{"role": "user", "content": "t"}]')
    for args in (["sessions"], ["doctor"], ["inspect", "x"], ["export", "x"], ["import", str(log)]):
        result = cli(*args, workdir=tmp_path)
        assert result.exit_code == 1, args
        (line,) = result.output.splitlines()
        assert f"{db}: not a usable SQLite database" in line and "integrity_check" in line


def test_flipped_bytes_in_the_database_file_are_one_line_or_a_named_session(
    tmp_path: Path,
) -> None:
    two_sessions(tmp_path)
    db = tmp_path / ".context-compact" / "sessions.db"
    import sqlite3

    checkpoint = sqlite3.connect(db)
    checkpoint.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    checkpoint.close()
    data = bytearray(db.read_bytes())
    for at in range(4096, len(data), 4096):  # every page's first 64 bytes
        data[at : at + 64] = bytes(b ^ 0x5A for b in data[at : at + 64])
    db.write_bytes(bytes(data))
    for args in (["sessions"], ["doctor"]):
        result = cli(*args, workdir=tmp_path)
        assert result.exit_code == 1, (args, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit), args


def test_doctor_in_a_folder_without_a_store_checks_nothing_creates_nothing_and_names_the_extras(
    tmp_path: Path,
) -> None:
    plain = cli("doctor", workdir=tmp_path)
    assert plain.exit_code == 0, plain.output
    lines = plain.output.splitlines()
    assert lines[0] == f"no sessions in {tmp_path.resolve()}: nothing to check"
    assert lines[1].startswith("framework extras: ")
    report = json.loads(cli("doctor", "--json", workdir=tmp_path).output)
    assert report["sessions"] == [] and report["integrity_check"] is None
    assert isinstance(report["frameworks"], dict)
    assert not (tmp_path / ".context-compact").exists()
