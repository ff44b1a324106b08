"""``sessions`` as a newcomer meets it: a table that fits the terminal, one meaning of
"compactions" with ``inspect``, ``sessions rm`` and ``sessions prune --empty``, no session left
by a chat quit at once, and an import that says what it did (nothing found; the same log
again)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import stub_api as s
from cli_model import SETTINGS
from context_compact.cli import main
from context_compact.store import WORKDIR_DB, SqliteStore

LONG = "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.json"


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)


def cli(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, input=input)


def log(folder: Path, name: str = LONG, text: str = "hi") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    messages = [{"role": "user", "content": text}, {"role": "assistant", "content": "yo"}]
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


def imported(work: Path, path: Path) -> list[dict[str, Any]]:
    result = cli("import", str(path), "--workdir", str(work), "--json")
    assert result.exit_code == 0, result.output
    sessions: list[dict[str, Any]] = json.loads(result.stdout)["sessions"]
    return sessions


def listed(work: Path) -> list[dict[str, Any]]:
    result = cli("sessions", "--workdir", str(work), "--json")
    assert result.exit_code == 0, result.output
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows


# -- the table -------------------------------------------------------------------------------


@pytest.mark.parametrize("columns", [80, 200])
def test_sessions_fits_the_terminal_cutting_long_sources_to_their_kind_and_end(
    tmp_path: Path, columns: int
) -> None:
    work = tmp_path / "work"
    sid = imported(work, log(tmp_path / "logs"))[0]["id"]
    result = cli("sessions", "--workdir", str(work), env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= columns for line in lines), lines
    (row,) = [line for line in lines if line.startswith(sid)]
    # The source names the session (the file's name without its extension).
    if columns == 80:
        assert "import …" in row and "940e6b99603c " in row
    else:
        assert f"import openai_chat: {LONG.removesuffix('.json')}" in row


def test_sessions_wide_shows_every_source_whole_in_80_columns(tmp_path: Path) -> None:
    work = tmp_path / "work"
    imported(work, log(tmp_path / "logs"))
    result = cli("sessions", "--workdir", str(work), "--wide", env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert f"import openai_chat: {LONG.removesuffix('.json')}" in result.stdout


def test_sessions_counts_compactions_as_inspect_does_and_says_what_they_are(
    tmp_path: Path,
) -> None:
    work = tmp_path / "demo"
    assert cli("demo", "--workdir", str(work)).exit_code == 0
    (row,) = listed(work)
    timeline = json.loads(cli("inspect", row["id"], "--workdir", str(work), "--json").stdout)
    assert row["compactions"] == len(timeline["events"]) > 0
    assert row["turns"] == timeline["turns"]
    shown = cli("sessions", "--workdir", str(work)).stdout
    assert "compactions: passes that changed the view" in " ".join(shown.split())


# -- removing sessions -----------------------------------------------------------------------


def test_sessions_rm_removes_each_session_named(tmp_path: Path) -> None:
    work = tmp_path / "work"
    first = imported(work, log(tmp_path / "logs", "a.json", "one"))[0]["id"]
    second = imported(work, log(tmp_path / "logs", "b.json", "two"))[0]["id"]
    third = imported(work, log(tmp_path / "logs", "c.json", "three"))[0]["id"]
    result = cli("sessions", "rm", first, third, "--workdir", str(work))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [f"removed session {first}", f"removed session {third}"]
    assert [row["id"] for row in listed(work)] == [second]
    assert cli("export", first, "--workdir", str(work)).exit_code == 1


def test_sessions_rm_with_an_unknown_id_removes_nothing(tmp_path: Path) -> None:
    work = tmp_path / "work"
    sid = imported(work, log(tmp_path / "logs"))[0]["id"]
    result = cli("sessions", "rm", sid, "nope", "--workdir", str(work))
    assert result.exit_code == 1 and "no session 'nope'" in result.stderr
    assert "Usage:" not in result.stderr  # a session not found is no usage mistake
    assert [row["id"] for row in listed(work)] == [sid]


def test_sessions_prune_empty_removes_the_sessions_that_logged_nothing(tmp_path: Path) -> None:
    work = tmp_path / "work"
    kept = imported(work, log(tmp_path / "logs"))[0]["id"]
    store = SqliteStore(work / WORKDIR_DB, root=work)
    empty = store.create_session({"engine": "default"})
    store.close()
    dry = cli("sessions", "prune", "--empty", "--dry-run", "--workdir", str(work))
    assert dry.stdout == f"would remove session {empty}\n"
    assert len(listed(work)) == 2
    result = cli("sessions", "prune", "--empty", "--workdir", str(work))
    assert result.exit_code == 0, result.output
    assert result.stdout == f"removed session {empty}\n"
    assert [row["id"] for row in listed(work)] == [kept]


def test_sessions_prune_without_a_criterion_is_a_usage_error(tmp_path: Path) -> None:
    work = tmp_path / "work"
    imported(work, log(tmp_path / "logs"))
    result = cli("sessions", "prune", "--workdir", str(work))
    assert result.exit_code == 2 and "--empty" in result.stderr


def test_a_chat_quit_at_once_leaves_no_session(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = {"MODEL_ID": "m", "ANTHROPIC_BASE_URL": s.closed_port_url()}
    result = cli("chat", "--workdir", str(work), env=env, input="q\n")
    assert result.exit_code == 0, result.output
    assert "not kept" in result.stderr
    assert listed(work) == []


# -- import ----------------------------------------------------------------------------------


def test_importing_a_folder_with_no_logs_says_so_and_exits_1(tmp_path: Path) -> None:
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    (tmp_path / "empty" / "notes.txt").write_text("not a log", encoding="utf-8")
    result = cli("import", str(tmp_path / "empty"), "--workdir", str(tmp_path / "work"))
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert f"no agent logs under {tmp_path / 'empty'}" in line and "*.jsonl" in line


def test_importing_the_same_log_twice_is_the_same_session_and_says_so(tmp_path: Path) -> None:
    work = tmp_path / "work"
    path = log(tmp_path / "logs")
    (first,) = imported(work, path)
    copy = log(tmp_path / "elsewhere", "renamed.json")
    (again,) = imported(work, copy)
    assert again["id"] == first["id"] and again["already_imported"] is True
    assert first["already_imported"] is False
    text = cli("import", str(path), "--workdir", str(work))
    assert text.exit_code == 0
    assert text.stdout.startswith(f"already imported as {first['id']} (same content)")
    assert [row["id"] for row in listed(work)] == [first["id"]]


def test_a_mini_swe_agent_step_with_several_commands_is_named_in_the_report(
    tmp_path: Path,
) -> None:
    chat = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "Two.\n```bash\nls\n```\n```bash\npwd\n```"},
        {"role": "user", "content": "Please always provide EXACTLY ONE action"},
    ]
    path = tmp_path / "issue.traj.json"
    path.write_text(json.dumps(chat), encoding="utf-8")
    result = cli("import", str(path), "--workdir", str(tmp_path / "work"))
    assert result.exit_code == 0, result.output
    assert "1 kept in another form (several_actions_as_text=1)" in result.stdout
