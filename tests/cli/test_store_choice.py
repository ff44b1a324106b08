"""The store a CLI invocation was given belongs to that invocation: it is held by its click
context, so nothing after the command (another invocation in the same process, a library
call) sees it."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from context_compact.cli import main
from context_compact.cli.store_choice import selected
from context_compact.store.url import ENV


def test_the_store_a_command_was_given_does_not_outlive_the_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    seen: list[str | None] = []

    @main.command("probe-store", hidden=True)
    def probe() -> None:
        seen.append(selected())

    try:
        result = CliRunner().invoke(main, ["--store", "memory:", "probe-store"])
        assert result.exit_code == 0, result.output
        assert seen == ["memory:"]
        assert selected() is None
        result = CliRunner().invoke(main, ["probe-store"])
        assert result.exit_code == 0, result.output
        assert seen == ["memory:", None]
    finally:
        main.commands.pop("probe-store")


def test_outside_a_command_the_environment_alone_names_the_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ENV, "memory:")
    assert selected() == "memory:"
