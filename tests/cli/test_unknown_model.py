"""A model whose window we do not know is not silently given one: the CLI says so on stderr
(quiet with ``--quiet``, and not said once a limit is given), in its own words and not as a
Python warning (the library's ``UnknownModelWarning``: ``tests/session/test_assumed_window.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cli_model import SETTINGS, serve
from context_compact.cli import main
from context_compact.sizing import DEFAULT_WINDOW
from stub_api import Reply, StubAPI


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)


def run(stub: StubAPI, work: Path, model: str, *extra: str) -> str:
    serve(stub, Reply(text="an answer"))
    env = {"MODEL_ID": model, "ANTHROPIC_BASE_URL": stub.url, "ANTHROPIC_API_KEY": "x"}
    args = ["run", "hi", "--workdir", str(work), *extra]
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 0, result.output
    return result.stderr


def test_the_cli_says_which_window_it_assumes_for_an_unknown_model(
    stub_api: StubAPI, tmp_path: Path
) -> None:
    stderr = run(stub_api, tmp_path, "my-finetune-7b")
    (line,) = [x for x in stderr.splitlines() if "my-finetune-7b" in x]
    assert f"assuming {DEFAULT_WINDOW:,} tokens" in line and "--context-limit" in line


@pytest.mark.parametrize(
    ("model", "extra"),
    [
        ("claude-sonnet-4-5", ()),
        ("my-finetune-7b", ("--context-limit", "30000")),
        ("my-finetune-7b", ("--quiet",)),
    ],
)
def test_the_cli_says_nothing_of_windows_for_a_known_model_a_given_limit_or_quiet(
    stub_api: StubAPI, tmp_path: Path, model: str, extra: tuple[str, ...]
) -> None:
    assert "context window we know" not in run(stub_api, tmp_path, model, *extra)
