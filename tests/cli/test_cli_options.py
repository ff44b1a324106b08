"""The agent commands' options as a newcomer meets them: a nonsensical ``--context-limit`` is a
usage error naming the minimum, and every option of every command says what it does."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from cli_model import SETTINGS
from context_compact.cli import main


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("policy", ["default", "seed"])
@pytest.mark.parametrize("command", ["run", "compact"])
def test_a_context_limit_below_the_minimum_is_a_usage_error_naming_it(
    tmp_path: Path, policy: str, command: str
) -> None:
    log = tmp_path / "log.json"
    log.write_text('[{"role": "user", "content": "hi"}]', encoding="utf-8")
    args = ["run", "hi"] if command == "run" else ["compact", str(log), "--dry-run"]
    args += ["--policy", policy, "--context-limit", "10", "--workdir", str(tmp_path)]
    env = {"MODEL_ID": "m", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 2, result.output
    assert "--context-limit" in result.stderr and "minimum of 1,024" in result.stderr


def options_without_help(command: click.Command, path: str) -> list[str]:
    missing = [
        f"{path} {option.opts[0]}"
        for option in command.params
        if isinstance(option, click.Option) and not option.hidden and not option.help
    ]
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):  # the lazily loaded ones (bench) too
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            missing += options_without_help(sub, f"{path} {name}")
    return missing


def test_every_option_of_every_command_has_help_text() -> None:
    assert options_without_help(main, "context-compact") == []
