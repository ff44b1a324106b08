"""docs/cli.md is what ``scripts/cli_reference.py`` writes now: click's help of every command.

The CLI reference is generated, so a changed option or help text fails here until the page is
regenerated (``python scripts/cli_reference.py``); ``--check`` says so with a diff.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts/cli_reference.py"


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cli_reference", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_cli_reference_page_is_what_the_script_writes_now() -> None:
    module = script()
    page = (ROOT / "docs/cli.md").read_text(encoding="utf-8")
    assert page == module.render(), "docs/cli.md is stale: run python scripts/cli_reference.py"


def test_the_cli_reference_has_a_section_for_every_command_and_subcommand() -> None:
    page = script().render()
    for command in ("run", "chat", "check-model", "inspect", "sessions rm", "bench", "ui"):
        assert f"## `context-compact {command}`" in page


def test_check_mode_exits_1_with_a_diff_when_the_page_is_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = script()
    page = tmp_path / "cli.md"
    page.write_text("# CLI reference\n\nold\n", encoding="utf-8")
    assert module.main_(["--check", "--page", str(page)]) == 1
    out, err = capsys.readouterr()
    assert "-old" in out and "+## `context-compact run`" in out
    assert "the CLI reference is stale" in err
    assert page.read_text(encoding="utf-8") == "# CLI reference\n\nold\n"
    assert module.main_(["--page", str(page)]) == 0
    assert page.read_text(encoding="utf-8") == module.render()
