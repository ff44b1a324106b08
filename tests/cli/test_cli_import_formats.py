"""``context-compact import`` of the newer log formats, as a user runs it: an aider chat
history found in a project folder, an OpenHands V1 conversation folder, a tau-bench results
list; each report line names the session, its tool calls (as many as the source has) and
every item skipped or kept in another form."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cli_model import SETTINGS
from context_compact.cli import main

DATA = Path(__file__).parents[1] / "data"
AIDER = DATA / "aider/aider-repo.aider.chat.history.md"
GOAL = DATA / "openhands_v1/goal-review-events.jsonl"
SCHEMA = DATA / "openhands_v1/constructed-schema-events.json"
TAU = DATA / "results_list/tau-bench-gpt-4o-airline-first3.json"


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def imported(work: Path, path: Path) -> list[dict[str, Any]]:
    result = cli("import", str(path), "--workdir", str(work), "--json")
    assert result.exit_code == 0, result.output
    sessions: list[dict[str, Any]] = json.loads(result.stdout)["sessions"]
    return sessions


def test_import_of_a_project_folder_picks_up_its_aider_history(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(AIDER, project / ".aider.chat.history.md")
    (project / "README.md").write_text("# not a log\n", encoding="utf-8")
    result = cli("import", str(project), "--workdir", str(tmp_path / "work"))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    assert ": aider .aider.chat.history 2024-08-21 16:02:08, 7 messages, 1 tool calls; " in lines[0]
    assert lines[0].endswith("1 kept in another form (command_output_as_text=1)")
    assert lines[1].endswith(
        ": aider .aider.chat.history 2024-08-21 16:04:44, 5 messages, 0 tool calls"
    )
    assert result.stderr == ""


def test_aider_tool_calls_in_the_report_are_the_commands_aider_ran(tmp_path: Path) -> None:
    ran = sum(line.startswith("> Running ") for line in AIDER.read_text("utf-8").splitlines())
    sessions = imported(tmp_path / "work", AIDER)
    assert sum(s["tool_uses"] for s in sessions) == ran == 1


def test_a_results_list_imports_one_session_per_run_named_by_its_task(tmp_path: Path) -> None:
    runs = json.loads(TAU.read_text(encoding="utf-8"))
    sessions = imported(tmp_path / "work", TAU)
    assert [s["name"] for s in sessions] == ["0 trial 0", "1 trial 0", "2 trial 0"]
    assert [s["format"] for s in sessions] == ["results_list"] * 3
    assert [s["tool_uses"] for s in sessions] == [
        sum(len(m.get("tool_calls") or []) for m in r["traj"]) for r in runs
    ]
    text = cli("import", str(TAU), "--workdir", str(tmp_path / "work"))
    assert text.exit_code == 0
    first = text.stdout.splitlines()[0]
    assert first.startswith(f"already imported as {sessions[0]['id']} (same content)")
    assert first.endswith("8 tool calls; 2 skipped or repaired (duplicate_id=2)")


def test_an_openhands_v1_log_names_the_observation_without_its_action(tmp_path: Path) -> None:
    result = cli("import", str(GOAL), "--workdir", str(tmp_path / "work"))
    assert result.exit_code == 0, result.output
    assert result.stdout.rstrip().endswith(
        ": openhands_v1 goal-review-events, 4 messages, 2 tool calls; "
        "1 skipped or repaired (orphan_tool_result=1)"
    )


def test_an_openhands_v1_conversation_folder_is_one_session(tmp_path: Path) -> None:
    events = json.loads(SCHEMA.read_text(encoding="utf-8"))
    folder = tmp_path / "conversations" / "5f2a" / "events"
    folder.mkdir(parents=True)
    for index, event in enumerate(events):
        path = folder / f"event-{index:05d}-{event['id']}.json"
        path.write_text(json.dumps(event), encoding="utf-8")
    (folder.parent / "base_state.json").write_text("{}", encoding="utf-8")
    result = cli(
        "import",
        str(tmp_path / "conversations" / "5f2a" / "events"),
        "--workdir",
        str(tmp_path / "w"),
    )
    assert result.exit_code == 0, result.output
    (line,) = result.stdout.splitlines()
    actions = sum(e["kind"] == "ActionEvent" for e in events)
    assert f": openhands_v1 5f2a, 9 messages, {actions} tool calls; " in line
    assert "1 skipped or repaired (unknown_event:SomeFutureEvent=1)" in line
    assert line.endswith("1 kept in another form (reasoning_as_text=1)")


def test_a_conversations_folder_passes_over_the_state_file_beside_events(tmp_path: Path) -> None:
    """The SDK keeps ``base_state.json`` (settings) next to ``events/``: not a log."""
    folder = tmp_path / "conv" / "events"
    folder.mkdir(parents=True)
    for index, event in enumerate(json.loads(SCHEMA.read_text(encoding="utf-8"))):
        (folder / f"event-{index:05d}-x.json").write_text(json.dumps(event), encoding="utf-8")
    (tmp_path / "conv" / "base_state.json").write_text('{"id": "conv"}', encoding="utf-8")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "base_state.json").write_text('{"id": "x"}', encoding="utf-8")
    result = cli("import", str(tmp_path), "--workdir", str(tmp_path / ".work"))
    assert result.exit_code == 1
    (line,) = result.stdout.splitlines()
    assert ": openhands_v1 conv, 9 messages, 4 tool calls" in line
    # Only the state file with an events folder beside it is passed over.
    (error,) = result.stderr.splitlines()
    assert error.startswith(f"error: {tmp_path / 'other' / 'base_state.json'}: not a known")
