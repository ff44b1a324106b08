"""One set of numbers: what the demo prints about each compaction (its turn, stage and token
counts) is what ``inspect`` and ``sessions`` say about the same session afterwards, and any
figure that is not the compactor's own says whose it is."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from context_compact.cli import main


def test_the_demos_compactions_are_inspects_turn_for_turn(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    shown = CliRunner().invoke(main, ["demo", "--workdir", str(root)])
    assert shown.exit_code == 0, shown.output
    printed = [
        (int(turn), stage, int(before.replace(",", "")), int(after.replace(",", "")))
        for turn, stage, before, after in re.findall(
            r"⟳ before turn (\d+): (\w+): ([\d,]+) → ([\d,]+) tokens", shown.stdout
        )
    ]
    (row,) = json.loads(
        CliRunner().invoke(main, ["sessions", "--workdir", str(root), "--json"]).stdout
    )
    timeline = json.loads(
        CliRunner().invoke(main, ["inspect", row["id"], "--workdir", str(root), "--json"]).stdout
    )
    events = [(e["turn"], e["stage"], e["before"], e["after"]) for e in timeline["events"]]
    assert printed == events and len(events) == row["compactions"]
    assert f"{len(events)} compaction events" in shown.stdout
    assert "tokens in · " in shown.stdout and "out (the model's count)" in shown.stdout
    assert "API refused the prompt (its words: " in shown.stdout


@pytest.mark.parametrize("width", [80, 200])
def test_every_line_of_inspect_fits_its_width(tmp_path: Path, width: int) -> None:
    root = tmp_path / "demo"
    assert CliRunner().invoke(main, ["demo", "--workdir", str(root)]).exit_code == 0
    (row,) = json.loads(
        CliRunner().invoke(main, ["sessions", "--workdir", str(root), "--json"]).stdout
    )
    args = ["inspect", row["id"], "--workdir", str(root), "--width", str(width)]
    shown = CliRunner().invoke(main, args)
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert [line for line in lines if len(line) > width] == []
    assert any("(+" in line for line in lines) and any("copy: " in line for line in lines)


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def test_on_a_terminal_the_demo_wraps_at_word_boundaries(tmp_path: Path) -> None:
    env = {"TTY_COMPATIBLE": "1", "NO_COLOR": "1", "COLUMNS": "100"}
    shown = CliRunner().invoke(main, ["demo", "--workdir", str(tmp_path / "demo")], env=env)
    assert shown.exit_code == 0, shown.output
    lines = ANSI.sub("", shown.stdout).splitlines()
    assert [line for line in lines if len(line) > 100] == []
    words = " ".join(" ".join(lines).split())
    assert "a real SQLite session store, default policy at a 6,000-token limit" in words
    copies = re.findall(r"full copy: (\S+)", words)
    assert copies and all(Path(tmp_path / "demo" / c).is_file() for c in copies)


def test_a_pass_after_the_last_answer_is_named_as_such() -> None:
    from context_compact.history.inspect import after_last

    assert after_last(39, [3, 17, 39]) is None
    legend = after_last(39, [3, 40])
    assert legend is not None and "turn 40: the request after its last one" in legend
