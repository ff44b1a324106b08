"""The CLI takes a session by the start of its id when no other session's id starts so
(``inspect 717c``); an ambiguous or unknown start is one usage line. ``export`` has
``--json`` as the other session commands do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli_model import SETTINGS, serve
from context_compact import Compactor, Policy
from context_compact.cli import main
from context_compact.store import workdir_store
from stub_api import Reply, StubAPI


def sessions(work: Path, ids: list[str]) -> None:
    store = workdir_store(work)
    try:
        for sid in ids:
            c = Compactor(Policy.default(context_limit=50_000), store, session=sid)
            c.prepare([{"role": "user", "content": f"hello from {sid}"}], "hello")
    finally:
        store.close()


@pytest.mark.parametrize(
    "command",
    [["inspect"], ["export"], ["recall", "{sid}", "hello"], ["compact", "--dry-run"]],
    ids=["inspect", "export", "recall", "compact"],
)
def test_a_unique_start_of_an_id_names_the_session(tmp_path: Path, command: list[str]) -> None:
    sessions(tmp_path, ["717c0ffee001", "9a0000000002"])
    args = [a.replace("{sid}", "717c") for a in command]
    if "{sid}" not in command:
        args.insert(1, "717c")
    result = CliRunner().invoke(main, [*args, "--workdir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    if command[0] in ("export", "recall"):
        assert "hello from 717c0ffee001" in result.output


def test_an_ambiguous_start_is_one_line_naming_the_candidates(tmp_path: Path) -> None:
    sessions(tmp_path, ["717c0ffee001", "717c0ffee002"])
    result = CliRunner().invoke(main, ["inspect", "717c", "--workdir", str(tmp_path)])
    assert result.exit_code == 1 and "Usage:" not in result.stderr
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("Error:")]
    assert "ambiguous" in line and "717c0ffee001" in line and "717c0ffee002" in line
    assert "Traceback" not in result.output


def test_an_unknown_start_still_says_no_session(tmp_path: Path) -> None:
    sessions(tmp_path, ["717c0ffee001"])
    result = CliRunner().invoke(main, ["export", "ffff", "--workdir", str(tmp_path)])
    assert result.exit_code == 1 and "no session 'ffff'" in result.stderr


def test_export_json_says_what_it_wrote(tmp_path: Path) -> None:
    sessions(tmp_path, ["717c0ffee001"])
    out = tmp_path / "out.jsonl"
    args = ["export", "717c", "-o", str(out), "--json", "--workdir", str(tmp_path)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["session"] == "717c0ffee001" and data["output"] == str(out)
    assert data["bytes"] == out.stat().st_size and data["format"] == "jsonl"
    inline = CliRunner().invoke(main, ["export", "717c", "--json", "--workdir", str(tmp_path)])
    assert json.loads(inline.stdout)["text"] == out.read_text()


def test_run_resumes_a_session_by_the_start_of_its_id(
    stub_api: StubAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    sessions(tmp_path, ["717c0ffee001", "9a0000000002"])
    serve(stub_api, Reply(text="again"))
    env = {"MODEL_ID": "claude-sonnet-4-5", "ANTHROPIC_BASE_URL": stub_api.url}
    env["ANTHROPIC_API_KEY"] = "x"
    args = ["run", "more", "--resume", "717c", "--json", "--workdir", str(tmp_path)]
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["session"] == "717c0ffee001"
