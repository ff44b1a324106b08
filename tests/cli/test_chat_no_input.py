"""``chat`` with nothing to read (``< /dev/null``) says one consistent thing: no session is
kept, never that one is saved; piped input puts no prompt on stdout (only answers go there).
A chat that asked something says at the end how to continue it."""

from __future__ import annotations

import re
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
    env = {"MODEL_ID": "claude-sonnet-4-5", "ANTHROPIC_BASE_URL": stub.url}
    return CliRunner().invoke(main, ["chat", "--workdir", str(work)], env=env, input=typed)


def test_chat_with_no_input_says_no_session_was_kept_and_never_that_one_is_saved(
    stub_api: StubAPI, tmp_path: Path
) -> None:
    result = chat(stub_api, tmp_path, "")
    assert result.exit_code == 0, result.output
    assert "nothing asked: the session was not kept" in result.stderr
    assert "is saved" not in result.stderr
    assert result.stdout == ""
    listed = CliRunner().invoke(main, ["sessions", "--json", "--workdir", str(tmp_path)])
    assert '"id"' not in listed.output


def test_a_chat_that_asked_says_at_its_end_how_to_continue(
    stub_api: StubAPI, tmp_path: Path
) -> None:
    serve(stub_api, Reply(text="Blue."))
    result = chat(stub_api, tmp_path, "sky?\n")
    assert result.exit_code == 0, result.output
    assert result.stdout == "Blue.\n"
    last = result.stderr.strip().splitlines()[-1]
    assert re.fullmatch(r"Session \w+ is saved: continue it with --resume \w+\.", last), last
