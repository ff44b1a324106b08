"""The command outputs shown in README.md and docs/*.md are what the commands print today.

``scripts/readme_outputs.py`` reruns the commands of every ``<!-- output: NAME -->`` block;
here its rewrite of each page must leave the page as it is, and a figure changed by hand
in a block must be put back (so a stale block fails this test). The Codex blocks read the
trajectory pack in ``tests/data/trajectories``.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts/readme_outputs.py"
README = ROOT / "README.md"


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("readme_outputs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def outputs() -> tuple[ModuleType, dict[Path, str]]:
    module = script()
    if not (module.PACK / module.ROLLOUT).is_file():
        pytest.skip(f"no trajectory pack at {module.PACK} (the Codex blocks read its rollout)")
    fresh = {}
    for page in module.pages():
        text = page.read_text(encoding="utf-8")
        if module.BLOCK.search(text):
            fresh[page] = module.rewrite(text, module.PACK)
    return module, fresh


def test_every_output_block_of_the_readme_and_the_docs_is_what_its_commands_print_now(
    outputs: tuple[ModuleType, dict[Path, str]],
) -> None:
    module, fresh = outputs
    names = {
        page.relative_to(ROOT).as_posix(): [
            m["name"] for m in module.BLOCK.finditer(page.read_text(encoding="utf-8"))
        ]
        for page in fresh
    }
    assert names == {
        "README.md": ["demo"],
        "docs/cli-guide.md": [
            "import-samples",
            "codex-dry-runs",
            "codex-compacted",
            "codex-resumed",
        ],
    }
    for page, text in fresh.items():
        assert text == page.read_text(encoding="utf-8"), (
            f"{page.name} outputs are stale: run python scripts/readme_outputs.py"
        )


def test_a_figure_changed_by_hand_in_a_block_is_put_back(
    outputs: tuple[ModuleType, dict[Path, str]],
) -> None:
    module, pages = outputs
    fresh = pages[ROOT / "docs/cli-guide.md"]
    block = next(m[0] for m in module.BLOCK.finditer(fresh) if m["name"] == "codex-dry-runs")
    line = next(line for line in block.splitlines() if line.startswith("final view:"))
    tampered = block.replace(line, line.replace(" tokens in ", "0 tokens in "))
    assert tampered != block
    assert module.rewrite(tampered, module.PACK) == block


def test_check_mode_exits_1_with_a_diff_when_a_block_is_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = script()
    readme = tmp_path / "README.md"
    stale = "# x\n\n<!-- output: demo -->\n```text\n$ context-compact demo\nold\n```\n"
    readme.write_text(stale + "<!-- /output -->\n", encoding="utf-8")
    assert module.main_(["--check", "--readme", str(readme)]) == 1
    out, err = capsys.readouterr()
    assert "README.md (as committed)" in out
    assert "-old" in out and "+9 turns, 10 model calls" in out
    assert "README outputs are stale: run python scripts/readme_outputs.py" in err
    assert "old" in readme.read_text(encoding="utf-8")  # --check writes nothing
    assert module.main_(["--readme", str(readme)]) == 0
    assert capsys.readouterr().out == f"rewrote {readme}\n"
    written = readme.read_text(encoding="utf-8")
    assert "\nold\n" not in written and "9 turns, 10 model calls" in written


def test_a_block_with_no_recipe_is_an_error_naming_it(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("<!-- output: nope -->\n```text\n```\n<!-- /output -->\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="no recipe for the output block 'nope'"):
        script().main_(["--check", "--readme", str(readme)])


def test_the_script_runs_as_a_user_runs_it(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("no blocks here\n", encoding="utf-8")
    command = [sys.executable, str(SCRIPT), "--check", "--readme", str(readme)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 1
    assert result.stderr == f"{readme}: no <!-- output: NAME --> block\n"
