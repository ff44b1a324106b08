"""A damaged ``.context-compact/sessions.db`` and an unwritable export, as a user meets them:
one line naming the file, SQLite's ``integrity_check`` answer and what to do; no traceback."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import stub_api as s
from cli_model import SETTINGS
from context_compact.cli import main

DB = Path(".context-compact/sessions.db")


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)


def cli(*args: str, input: str | None = None) -> Result:
    env = {"MODEL_ID": "m", "ANTHROPIC_BASE_URL": s.closed_port_url()}
    return CliRunner().invoke(main, list(args), env=env, input=input)


def imported(work: Path) -> str:
    log = work.parent / "log.json"
    log.write_text(
        json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]),
        encoding="utf-8",
    )
    result = cli("import", str(log), "--workdir", str(work), "--json")
    assert result.exit_code == 0, result.output
    return str(json.loads(result.stdout)["sessions"][0]["id"])


def checkpointed(db: Path) -> bytearray:
    connection = sqlite3.connect(db)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    return bytearray(db.read_bytes())


def garbage(db: Path) -> None:
    db.write_bytes(bytes(range(256)) * 20)


def flipped_text(db: Path) -> None:
    """A few flipped bytes inside a stored value: invalid UTF-8 where the meta is."""
    data = checkpointed(db)
    at = data.index(b'"engine"')
    data[at + 2] ^= 0xFF
    db.write_bytes(data)


def flipped_page(db: Path) -> None:
    """A few flipped bytes in a b-tree page header: SQLite finds the image malformed."""
    data = checkpointed(db)
    size = int.from_bytes(data[16:18], "big")  # the database header's page size
    for page in range(1, len(data) // size):
        data[page * size] = 0x01  # not a valid page type
    db.write_bytes(data)


def one_line_naming(result: Result, db: Path) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    (line,) = result.stderr.splitlines()
    assert str(db) in line and "integrity_check" in line and "move it aside" in line
    return line


@pytest.mark.parametrize("damage", [garbage, flipped_text, flipped_page])
@pytest.mark.parametrize(
    "command", ["sessions", "run", "run --resume", "chat --resume", "import", "export"]
)
def test_a_damaged_session_store_is_one_line_naming_it_and_what_sqlite_says(
    tmp_path: Path, damage: object, command: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    sid = imported(work)
    db = work / DB
    damage(db)  # type: ignore[operator]
    if command == "run" and damage is flipped_text:
        pytest.skip("a new session never reads the damaged value of another one")
    args = {
        "sessions": ["sessions"],
        "run": ["run", "hi"],
        "run --resume": ["run", "hi", "--resume", sid],
        "chat --resume": ["chat", "--resume", sid],
        "import": ["import", str(tmp_path / "log.json")],
        "export": ["export", sid],
    }[command]
    line = one_line_naming(cli(*args, "--workdir", str(work), input="q\n"), db.resolve())
    if damage is garbage:
        assert "integrity_check: file is not a database" in line.replace("(SQLite ", "")


def test_a_malformed_store_names_integrity_checks_own_findings(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    imported(work)
    flipped_page(work / DB)
    line = one_line_naming(cli("sessions", "--workdir", str(work)), (work / DB).resolve())
    verdict = line.split("integrity_check", 1)[1].lstrip(": ")
    assert not verdict.startswith("ok")


def test_export_to_a_missing_directory_says_to_create_it(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    sid = imported(work)
    target = tmp_path / "missing" / "dir" / "x.json"
    result = cli("export", sid, "-o", str(target), "--workdir", str(work))
    assert result.exit_code == 1 and "Traceback" not in result.output
    (line,) = result.stderr.splitlines()
    assert str(target) in line and f"create {target.parent} first" in line


def test_a_damaged_store_named_by_its_url_is_the_file_the_advice_moves_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    elsewhere = tmp_path / "elsewhere.db"
    garbage(elsewhere)
    monkeypatch.setenv("CC_STORE_URL", f"sqlite:///{elsewhere}")
    result = cli("sessions", "--workdir", str(work))
    line = one_line_naming(result, elsewhere)
    assert f"mv {elsewhere} {elsewhere}.broken" in line
    assert str(work / DB) not in line


# -- a FileStore (--store file:///DIR), a store URL of no known form, flipped journal bytes --


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The current directory is a new one (a store that ignored its URL would write there)."""
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")


def file_store_with_a_session(tmp_path: Path) -> tuple[str, str]:
    """``--store file:///<tmp>/files`` with one imported session: (url, session id)."""
    url = f"file://{tmp_path}/files"
    log = tmp_path / "log.json"
    log.write_text(json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-8")
    result = cli("--store", url, "import", str(log), "--json")
    assert result.exit_code == 0, result.output
    return url, str(json.loads(result.stdout)["sessions"][0]["id"])


@pytest.mark.usefixtures("in_tmp")
def test_a_file_store_url_keeps_sessions_in_its_folder_not_the_work_directory(
    tmp_path: Path,
) -> None:
    _url, sid = file_store_with_a_session(tmp_path)
    assert (tmp_path / "files" / ".transcripts/sessions" / f"{sid}.meta.json").is_file()
    assert not (tmp_path / "cwd" / ".transcripts").exists()


@pytest.mark.usefixtures("in_tmp")
@pytest.mark.parametrize("command", ["doctor", "export", "sessions"])
def test_a_cut_short_filestore_meta_is_one_line_naming_it(tmp_path: Path, command: str) -> None:
    url, sid = file_store_with_a_session(tmp_path)
    meta = tmp_path / "files" / ".transcripts/sessions" / f"{sid}.meta.json"
    meta.write_bytes(meta.read_bytes()[:20])
    args = {"doctor": ["doctor"], "export": ["export", sid], "sessions": ["sessions"]}[command]
    result = cli("--store", url, *args, "--workdir", str(tmp_path))
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    (line,) = result.stderr.splitlines()
    assert str(meta) in line and "not whole JSON" in line and "sessions.db" not in line, line


@pytest.mark.usefixtures("in_tmp")
def test_sessions_rm_removes_a_file_store_session(tmp_path: Path) -> None:
    url, sid = file_store_with_a_session(tmp_path)
    result = cli("--store", url, "sessions", "rm", sid)
    assert result.exit_code == 0 and f"removed session {sid}" in result.output, result.output
    assert "[]" in cli("--store", url, "sessions", "--json").stdout
    assert not list((tmp_path / "files" / ".transcripts/sessions").glob(f"{sid}.*"))


@pytest.mark.parametrize(
    "args", [["--store", "bogus://x", "doctor"], ["doctor", "--store", "bogus://x"]]
)
def test_a_store_url_of_no_known_form_is_a_usage_error_naming_it(
    tmp_path: Path, args: list[str]
) -> None:
    result = cli(*args, "--workdir", str(tmp_path))
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    (line,) = [text for text in result.stderr.splitlines() if text.startswith("Error")]
    assert "--store" in line and "'bogus://x'" in line and "sqlite:///PATH" in line


@pytest.mark.parametrize("schema", ["x;drop", "Upper", "1st"])
def test_a_postgresql_url_with_a_bad_schema_name_is_a_usage_error_not_a_damaged_sqlite_store(
    tmp_path: Path, schema: str
) -> None:
    url = f"postgresql://127.0.0.1:5432/test?schema={schema}"
    result = cli("--store", url, "sessions", "--workdir", str(tmp_path))
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    (line,) = [text for text in result.stderr.splitlines() if text.startswith("Error")]
    assert "--store" in line and f"not a valid schema name: {schema!r}" in line
    assert "SQLite" not in line and "sessions.db" not in line


def flipped_links(db: Path) -> None:
    """A flipped byte in a journal row's chain links: invalid UTF-8 in a text column."""
    with sqlite3.connect(db) as connection:
        (links,) = connection.execute("SELECT links FROM journal").fetchone()
    connection.close()
    data = checkpointed(db)
    data[data.index(links[:32].encode()) + 3] ^= 0xFF
    db.write_bytes(data)


@pytest.mark.parametrize("command", ["doctor", "export", "inspect"])
def test_flipped_bytes_in_a_journal_row_name_the_session_and_the_database_file(
    tmp_path: Path, command: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    sid = imported(work)
    flipped_links(work / DB)
    args = {"doctor": ["doctor"], "export": ["export", sid], "inspect": ["inspect", sid]}[command]
    result = cli(*args, "--workdir", str(work))
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert "decode" not in result.output
    line = result.output if command == "doctor" else result.stderr
    assert str(work / DB) in line and f"'{sid}'" in line and "record 0 was altered" in line


# -- a page overwritten (integrity_check answers in lines), a store path that does not exist --


def overwritten_page(db: Path) -> None:
    """A page of the database overwritten with 0xFF: SQLite's integrity_check answers with
    line breaks inside its rows."""
    data = checkpointed(db)
    size = int.from_bytes(data[16:18], "big")
    assert len(data) >= 4 * size, "the test needs a database of four pages or more"
    data[2 * size : 3 * size] = b"\xff" * size
    db.write_bytes(data)


@pytest.mark.parametrize("command", ["sessions", "doctor", "recall", "inspect", "export"])
def test_a_page_overwritten_is_still_one_line_and_doctor_does_not_send_you_to_doctor(
    tmp_path: Path, command: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    sid = imported(work)
    db = work / DB
    overwritten_page(db)
    args = {"recall": ["recall", sid, "hi"], "inspect": ["inspect", sid], "export": ["export", sid]}
    line = one_line_naming(cli(*args.get(command, [command]), "--workdir", str(work)), db.resolve())
    assert "context-compact doctor" not in line
    assert line.count("Restore") == 1


@pytest.mark.parametrize("command", ["sessions", "doctor", "recall", "inspect", "export"])
@pytest.mark.parametrize("form", ["sqlite-relative", "sqlite-absolute", "file"])
def test_a_command_that_reads_refuses_a_store_path_that_does_not_exist_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, form: str
) -> None:
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "nowhere" / "sessions.db"
    url = {
        # What a user means by /tmp/... written after three slashes: relative, as SQLAlchemy.
        "sqlite-relative": f"sqlite://{missing}",
        "sqlite-absolute": f"sqlite:///{missing}",
        "file": f"file://{missing.parent}",
    }[form]
    args = {"recall": ["recall", "x", "y"], "inspect": ["inspect", "x"], "export": ["export", "x"]}
    result = cli("--store", url, *args.get(command, [command]))
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    (line,) = result.stderr.splitlines()
    assert "no session store at" in line and "does not exist" in line and f"--store {url}" in line
    if form == "sqlite-relative":
        assert f"sqlite:///{missing}" in line  # the absolute form, spelled out
    assert sorted(p.name for p in tmp_path.rglob("*")) == []
