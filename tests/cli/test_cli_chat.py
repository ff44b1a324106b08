"""Chat's own slash commands: answered by chat itself, never sent to the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cli_model import SETTINGS, serve
from context_compact.cli import main
from stub_api import Reply, StubAPI


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)


def chat(stub: StubAPI, work: Path, typed: str) -> Result:
    env = {"MODEL_ID": "m", "ANTHROPIC_BASE_URL": stub.url}
    return CliRunner().invoke(main, ["chat", "--workdir", str(work)], env=env, input=typed)


def test_slash_help_lists_the_commands_and_is_not_sent(stub_api: StubAPI, tmp_path: Path) -> None:
    result = chat(stub_api, tmp_path, "/help\n")
    assert result.exit_code == 0, result.output
    for command in ("/help", "/quit", "/compact [focus]", "/sessions", "//text"):
        assert command in result.stderr
    assert stub_api.bodies == []


def test_slash_quit_quits_before_the_next_line(stub_api: StubAPI, tmp_path: Path) -> None:
    result = chat(stub_api, tmp_path, "/quit\nhello\n")
    assert result.exit_code == 0, result.output
    assert stub_api.bodies == []


def test_slash_sessions_lists_this_chat_among_the_sessions(
    stub_api: StubAPI, tmp_path: Path
) -> None:
    serve(stub_api, Reply(text="Hello."))
    result = chat(stub_api, tmp_path, "hello\n/sessions\nq\n")
    assert result.exit_code == 0, result.output
    (sid,) = [line.split()[-1] for line in result.stderr.splitlines() if "this chat:" in line]
    assert any(line.startswith(sid) for line in result.stderr.splitlines())
    assert len(stub_api.bodies) == 1 and "/sessions" not in json.dumps(stub_api.bodies)


def test_an_unknown_slash_command_is_named_and_not_sent(stub_api: StubAPI, tmp_path: Path) -> None:
    result = chat(stub_api, tmp_path, "/frobnicate now\n")
    assert result.exit_code == 0, result.output
    assert "unknown command /frobnicate" in result.stderr
    assert stub_api.bodies == []


def test_a_double_slash_or_a_path_goes_to_the_model_as_typed(
    stub_api: StubAPI, tmp_path: Path
) -> None:
    serve(stub_api, Reply(text="One."), Reply(text="Two."))
    result = chat(stub_api, tmp_path, "//help is a word\n/etc/hosts is missing\n")
    assert result.exit_code == 0, result.output
    sent = json.dumps(stub_api.bodies[-1]["messages"])
    assert '"/help is a word"' in sent and "/etc/hosts is missing" in sent
