"""``context-compact bench`` without the bench installed: one line saying what to install,
exit status 1, never a traceback (the bench is a distribution of its own)."""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner

from context_compact.cli import main


@pytest.mark.parametrize("args", [["--quick"], ["--help"], []])
def test_bench_without_the_bench_installed_says_in_one_line_what_to_install(
    monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    # A None entry in sys.modules makes the import fail as if the package were absent (the
    # command's module too: another test of this process may have loaded it).
    for name in ("context_compact_bench", "context_compact_bench.command"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(main, "commands", {k: v for k, v in main.commands.items() if k != "bench"})
    result = CliRunner().invoke(main, ["bench", *args])
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.output.strip().splitlines() == [
        "Error: context-compact bench needs the bench: pip install 'context-compact[bench]' "
        "(or: pip install context-compact-bench)"
    ]
