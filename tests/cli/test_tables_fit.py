"""Tables that fit: ``sessions`` keeps what tells sessions apart at 80 columns (the kind of
source and the end of its name: the file's last characters, the sidechain) and every table
honours ``COLUMNS`` (``sessions`` and ``inspect``), never printing a line wider."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from context_compact import Compactor, Policy
from context_compact.cli import main
from context_compact.cli.sessions import source_of, table_lines
from context_compact.store import workdir_store

FILE = "/logs/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
NAMES = ["fe5e1c67-53e7-4862-81ae-d0e013e3270b"] + [
    f"fe5e1c67-53e7-4862-81ae-d0e013e3270b/sidechain-{n}" for n in range(1, 6)
]


def rows() -> list[dict[str, object]]:
    return [
        {
            "id": f"{n:012x}",
            "started": "2026-12-01T22:11:31",
            "source": source_of(
                {"source": "import", "format": "claude_code", "file": FILE, "name": name}
            ),
            "turns": 9,
            "tokens_in_view": 27_993,
            "compactions": 0,
        }
        for n, name in enumerate(NAMES)
    ]


@pytest.mark.parametrize("width", [80, 60, 50])
def test_sessions_of_one_file_and_its_sidechains_stay_apart_within_the_width(width: int) -> None:
    lines = table_lines(rows(), width, wide=False)
    assert max(len(line) for line in lines) <= width
    sources = [line.split("  ")[1 if width < 70 else 2] for line in lines[2:]]
    assert len(set(sources)) == len(NAMES), sources
    assert all(s.rstrip().endswith(f"-{n}") for n, s in enumerate(sources[1:], 1))


def test_at_80_columns_the_source_keeps_its_kind_and_the_start_time_stays() -> None:
    lines = table_lines(rows(), 80, wide=False)
    assert lines[0].split() == ["id", "started", "source", "turns", "in", "view", "compactions"]
    assert "import …" in lines[3]


def session(work: Path) -> str:
    store = workdir_store(work)
    try:
        c = Compactor(Policy.default(context_limit=4_000), store)
        view: list[dict[str, object]] = [{"role": "user", "content": "go"}]
        for i in range(12):
            view = c.prepare(view, "go")
            use = {"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {"c": "x"}}
            result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": "y" * 3_000}
            view += [
                {"role": "assistant", "content": [use]},
                {"role": "user", "content": [result]},
            ]
        c.prepare(view, "go")
        assert c.session_id is not None
        return c.session_id
    finally:
        store.close()


@pytest.mark.parametrize("command", [["sessions"], ["inspect", "{sid}"]])
def test_every_table_honours_columns(tmp_path: Path, command: list[str]) -> None:
    sid = session(tmp_path)
    args = [a.replace("{sid}", sid) for a in command] + ["--workdir", str(tmp_path)]
    result = CliRunner().invoke(main, args, env={"COLUMNS": "60"})
    assert result.exit_code == 0, result.output
    # A path stays whole, to be copied: its line alone may run past.
    lines = [x for x in result.stdout.splitlines() if not x.strip().startswith("copy: ")]
    assert max(len(line) for line in lines) <= 60, result.stdout
    if command[0] == "inspect":
        assert max(len(line) for line in lines) > 50  # it used the room it was given
