from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from context_compact.agent.tools import (
    GLOB_MAX_MATCHES,
    TOOL_SCHEMAS,
    ToolOutput,
    Workspace,
    head_and_tail,
)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "work"
    root.mkdir()
    return Workspace(root, bash_timeout=5)


def run_ok(ws: Workspace, name: str, **input: Any) -> str:
    out = ws.run(name, input)
    assert not out.is_error, out.text
    return out.text


def run_error(ws: Workspace, name: str, **input: Any) -> str:
    out = ws.run(name, input)
    assert out.is_error, out.text
    assert out.text.startswith("Error: ")
    return out.text


# --- schemas ---------------------------------------------------------------------------


def test_the_six_tools_are_declared_in_the_seeds_order() -> None:
    assert [s["name"] for s in TOOL_SCHEMAS] == [
        "bash",
        "read_file",
        "write_file",
        "edit_file",
        "glob",
        "compact",
    ]


def test_compact_schema_is_exactly_the_seeds() -> None:
    compact = TOOL_SCHEMAS[-1]
    assert compact == {
        "name": "compact",
        "description": "Summarize earlier conversation to free context space.",
        "input_schema": {"type": "object", "properties": {}},
    }


def test_read_file_takes_an_optional_offset_and_limit() -> None:
    schema = next(s for s in TOOL_SCHEMAS if s["name"] == "read_file")["input_schema"]
    assert schema["required"] == ["path"]
    assert schema["properties"]["limit"]["type"] == "integer"
    assert schema["properties"]["offset"]["type"] == "integer"


# --- bash ------------------------------------------------------------------------------


def test_bash_runs_in_the_work_directory_and_combines_stdout_and_stderr(ws: Workspace) -> None:
    text = run_ok(ws, "bash", command="pwd; echo out; echo err >&2")
    assert text == f"{ws.root}\nout\nerr"


def test_bash_says_no_output_when_the_command_prints_nothing(ws: Workspace) -> None:
    assert run_ok(ws, "bash", command="true") == "(no output)"


def test_bash_appends_a_non_zero_exit_code(ws: Workspace) -> None:
    assert run_ok(ws, "bash", command="echo oops; exit 3") == "oops\n[exit code 3]"


def test_bash_commands_cannot_wait_on_the_agents_stdin(ws: Workspace) -> None:
    assert run_ok(ws, "bash", command="cat") == "(no output)"


def test_bash_keeps_the_head_and_the_tail_of_long_output(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, max_output_chars=1000)
    text = run_ok(ws, "bash", command="echo FIRST; seq 1 5000; echo LAST-ERROR")
    assert text.startswith("FIRST\n")
    assert text.endswith("4999\n5000\nLAST-ERROR")
    assert "characters omitted] ..." in text
    assert len(text) < 1100


def test_head_and_tail_gives_the_tail_the_larger_share() -> None:
    text = "h" * 500 + "t" * 500
    cut = head_and_tail(text, 100)
    head, marker, tail = cut.split("\n")
    assert head == "h" * 40
    assert marker == "... [900 characters omitted] ..."
    assert tail == "t" * 60
    assert head_and_tail("short", 100) == "short"


def test_bash_timeout_kills_the_whole_process_group_and_reports_output(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, bash_timeout=0.5)
    started = time.monotonic()
    out = ws.run(
        "bash", {"command": "echo before; sh -c 'echo $$ > child.pid; exec sleep 30' & wait"}
    )
    assert time.monotonic() - started < 3
    assert out.is_error
    assert out.text.startswith("Error: timed out after 0.5s")
    assert "before" in out.text
    child = int((tmp_path / "child.pid").read_text())
    assert _eventually_gone(child)


def _eventually_gone(pid: int, within: float = 2.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        stat = Path(f"/proc/{pid}/stat")
        if stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"):
            return True  # killed; only waiting for an init that does not reap
        time.sleep(0.05)
    return False


# --- read_file -------------------------------------------------------------------------


def write_lines(path: Path, count: int) -> None:
    path.write_text("".join(f"line {i}\n" for i in range(1, count + 1)), encoding="utf-8")


def test_read_file_returns_the_whole_file(ws: Workspace) -> None:
    (ws.root / "a.txt").write_text("one\ntwo\n", encoding="utf-8")
    assert run_ok(ws, "read_file", path="a.txt") == "one\ntwo"


def test_read_file_with_a_limit_says_how_to_continue(ws: Workspace) -> None:
    write_lines(ws.root / "a.txt", 10)
    text = run_ok(ws, "read_file", path="a.txt", limit=3)
    assert text == "line 1\nline 2\nline 3\n... (7 more lines; continue with offset=4)"


def test_read_file_pages_with_offset_and_limit(ws: Workspace) -> None:
    write_lines(ws.root / "a.txt", 10)
    assert run_ok(ws, "read_file", path="a.txt", offset=4, limit=2) == (
        "line 4\nline 5\n... (5 more lines; continue with offset=6)"
    )
    assert run_ok(ws, "read_file", path="a.txt", offset=9) == "line 9\nline 10"


def test_read_file_cuts_long_files_at_a_line_and_gives_the_next_offset(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, max_output_chars=100)
    write_lines(tmp_path / "big.txt", 100)
    text = run_ok(ws, "read_file", path="big.txt")
    shown = text.splitlines()[:-1]
    assert shown == [f"line {i}" for i in range(1, len(shown) + 1)]
    next_offset = len(shown) + 1
    assert text.endswith(f"continue with offset={next_offset})")
    assert run_ok(ws, "read_file", path="big.txt", offset=next_offset).startswith(
        f"line {next_offset}\n"
    )


def test_read_file_refuses_an_offset_past_the_end(ws: Workspace) -> None:
    write_lines(ws.root / "a.txt", 3)
    assert "past the end" in run_error(ws, "read_file", path="a.txt", offset=4)


def test_read_file_refuses_zero_limit_and_offset(ws: Workspace) -> None:
    (ws.root / "a.txt").write_text("x", encoding="utf-8")
    run_error(ws, "read_file", path="a.txt", limit=0)
    run_error(ws, "read_file", path="a.txt", offset=0)


def test_read_file_reports_missing_files_and_directories(ws: Workspace) -> None:
    (ws.root / "sub").mkdir()
    assert "file not found: nope.txt" in run_error(ws, "read_file", path="nope.txt")
    assert "is a directory" in run_error(ws, "read_file", path="sub")


def test_read_file_replaces_bytes_that_are_not_utf8(ws: Workspace) -> None:
    (ws.root / "bin.txt").write_bytes(b"ok \xff\xfe end")
    assert run_ok(ws, "read_file", path="bin.txt") == "ok \ufffd\ufffd end"


def test_read_file_says_when_a_file_is_empty(ws: Workspace) -> None:
    (ws.root / "empty.txt").write_text("", encoding="utf-8")
    assert run_ok(ws, "read_file", path="empty.txt") == "(empty file)"


# --- write_file and edit_file ----------------------------------------------------------


def test_write_file_creates_parent_directories(ws: Workspace) -> None:
    text = run_ok(ws, "write_file", path="deep/er/x.txt", content="héllo")
    assert text == "Wrote 5 characters to deep/er/x.txt"
    assert (ws.root / "deep/er/x.txt").read_text(encoding="utf-8") == "héllo"


def test_write_file_accepts_an_absolute_path_inside_the_root(ws: Workspace) -> None:
    run_ok(ws, "write_file", path=str(ws.root / "abs.txt"), content="x")
    assert (ws.root / "abs.txt").read_text(encoding="utf-8") == "x"


def test_edit_file_replaces_the_text_once(ws: Workspace) -> None:
    (ws.root / "a.py").write_text("x = 1\ny = 2\n", encoding="utf-8")
    assert run_ok(ws, "edit_file", path="a.py", old_text="y = 2", new_text="y = 3") == "Edited a.py"
    assert (ws.root / "a.py").read_text(encoding="utf-8") == "x = 1\ny = 3\n"


def test_edit_file_replaces_the_first_of_several_and_says_how_many(ws: Workspace) -> None:
    (ws.root / "a.txt").write_text("ab ab ab", encoding="utf-8")
    text = run_ok(ws, "edit_file", path="a.txt", old_text="ab", new_text="X")
    assert "occurs 3 times; replaced the first" in text
    assert (ws.root / "a.txt").read_text(encoding="utf-8") == "X ab ab"


def test_edit_file_reports_text_not_found_and_leaves_the_file_alone(ws: Workspace) -> None:
    (ws.root / "a.txt").write_text("abc", encoding="utf-8")
    assert "text not found in a.txt" in run_error(
        ws, "edit_file", path="a.txt", old_text="zzz", new_text="y"
    )
    assert (ws.root / "a.txt").read_text(encoding="utf-8") == "abc"


def test_edit_file_refuses_empty_old_text_and_missing_files(ws: Workspace) -> None:
    (ws.root / "a.txt").write_text("abc", encoding="utf-8")
    run_error(ws, "edit_file", path="a.txt", old_text="", new_text="y")
    assert "file not found" in run_error(ws, "edit_file", path="b.txt", old_text="a", new_text="")


def test_edit_file_keeps_bytes_that_are_not_utf8(ws: Workspace) -> None:
    (ws.root / "mixed.txt").write_bytes(b"\xff keep \xfe\nold\n")
    run_ok(ws, "edit_file", path="mixed.txt", old_text="old", new_text="new")
    assert (ws.root / "mixed.txt").read_bytes() == b"\xff keep \xfe\nnew\n"


# --- confinement -----------------------------------------------------------------------


@pytest.mark.parametrize("path", ["../outside.txt", "sub/../../outside.txt"])
def test_dot_dot_paths_are_refused_for_every_file_tool(ws: Workspace, path: str) -> None:
    outside = ws.root.parent / "outside.txt"
    outside.write_text("secret", encoding="utf-8")
    for name, extra in [
        ("read_file", {}),
        ("write_file", {"content": "x"}),
        ("edit_file", {"old_text": "secret", "new_text": "x"}),
    ]:
        text = run_error(ws, name, path=path, **extra)
        assert text == f"Error: path outside the work directory: {path}"
    assert outside.read_text(encoding="utf-8") == "secret"


def test_absolute_paths_elsewhere_are_refused(ws: Workspace, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("secret", encoding="utf-8")
    run_error(ws, "read_file", path=str(elsewhere))
    run_error(ws, "write_file", path=str(elsewhere), content="x")
    assert elsewhere.read_text(encoding="utf-8") == "secret"


def test_a_symlink_escaping_the_root_is_refused(ws: Workspace, tmp_path: Path) -> None:
    secret_dir = tmp_path / "secrets"
    secret_dir.mkdir()
    (secret_dir / "key.txt").write_text("secret", encoding="utf-8")
    (ws.root / "link.txt").symlink_to(secret_dir / "key.txt")
    (ws.root / "linkdir").symlink_to(secret_dir, target_is_directory=True)
    assert "outside the work directory" in run_error(ws, "read_file", path="link.txt")
    run_error(ws, "write_file", path="link.txt", content="x")
    run_error(ws, "write_file", path="linkdir/new.txt", content="x")
    run_error(ws, "edit_file", path="linkdir/key.txt", old_text="secret", new_text="x")
    assert (secret_dir / "key.txt").read_text(encoding="utf-8") == "secret"
    assert not (secret_dir / "new.txt").exists()


def test_a_symlink_that_stays_inside_the_root_is_followed(ws: Workspace) -> None:
    (ws.root / "real.txt").write_text("inside", encoding="utf-8")
    (ws.root / "alias.txt").symlink_to(ws.root / "real.txt")
    assert run_ok(ws, "read_file", path="alias.txt") == "inside"


def test_read_roots_allow_reading_but_not_writing_elsewhere(tmp_path: Path) -> None:
    root, store = tmp_path / "work", tmp_path / "store"
    root.mkdir()
    store.mkdir()
    (store / "result.txt").write_text("persisted", encoding="utf-8")
    ws = Workspace(root, read_roots=(store,))
    assert run_ok(ws, "read_file", path=str(store / "result.txt")) == "persisted"
    run_error(ws, "write_file", path=str(store / "result.txt"), content="x")
    run_error(ws, "edit_file", path=str(store / "result.txt"), old_text="p", new_text="x")


# --- glob ------------------------------------------------------------------------------


def test_glob_matches_recursively_sorted_and_relative(ws: Workspace) -> None:
    for rel in ["b.py", "a.py", "pkg/c.py", "pkg/deep/d.py", "notes.txt"]:
        (ws.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws.root / rel).write_text("", encoding="utf-8")
    assert run_ok(ws, "glob", pattern="**/*.py") == "a.py\nb.py\npkg/c.py\npkg/deep/d.py"
    assert run_ok(ws, "glob", pattern="*") == "a.py\nb.py\nnotes.txt\npkg/"


def test_glob_says_when_nothing_matches(ws: Workspace) -> None:
    assert run_ok(ws, "glob", pattern="*.rs") == "(no matches)"


def test_glob_shows_at_most_200_matches(ws: Workspace) -> None:
    for i in range(GLOB_MAX_MATCHES + 5):
        (ws.root / f"f{i:03d}.txt").write_text("", encoding="utf-8")
    lines = run_ok(ws, "glob", pattern="*.txt").splitlines()
    assert len(lines) == GLOB_MAX_MATCHES + 1
    assert lines[0] == "f000.txt"
    assert lines[-1] == "... (5 more matches omitted; narrow the pattern)"


def test_glob_drops_matches_outside_the_root(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "outside.txt").write_text("", encoding="utf-8")
    (ws.root / "inside.txt").write_text("", encoding="utf-8")
    (ws.root / "escape.txt").symlink_to(outside / "outside.txt")
    (ws.root / "escdir").symlink_to(outside, target_is_directory=True)
    assert run_ok(ws, "glob", pattern="*.txt") == "inside.txt"
    assert run_ok(ws, "glob", pattern="escdir/*") == "(no matches)"
    assert run_ok(ws, "glob", pattern="../*") == "(no matches)"


def test_glob_refuses_absolute_and_empty_patterns(ws: Workspace) -> None:
    run_error(ws, "glob", pattern="/etc/*")
    run_error(ws, "glob", pattern="")


# --- dispatch and argument errors ------------------------------------------------------


def test_compact_is_left_to_the_agent_loop(ws: Workspace) -> None:
    assert "agent loop" in run_error(ws, "compact")


def test_unknown_tools_are_named_in_the_error(ws: Workspace) -> None:
    assert "unknown tool 'rm_rf'" in run_error(ws, "rm_rf")


def test_missing_and_mistyped_arguments_are_named(ws: Workspace) -> None:
    assert "missing argument 'command' for bash" in run_error(ws, "bash")
    assert "'limit' of read_file must be integer, got str" in run_error(
        ws, "read_file", path="a", limit="10"
    )
    assert "must be integer, got bool" in run_error(ws, "read_file", path="a", limit=True)
    assert "unknown argument(s) for glob: recursive" in run_error(
        ws, "glob", pattern="*", recursive=True
    )


def test_null_optional_arguments_count_as_absent(ws: Workspace) -> None:
    (ws.root / "a.txt").write_text("x\ny\n", encoding="utf-8")
    assert ws.run("read_file", {"path": "a.txt", "limit": None}) == ToolOutput("x\ny")


@pytest.mark.parametrize(
    ("name", "input"),
    [
        ("bash", None),
        ("bash", ["ls"]),
        ("read_file", {"path": "a\x00b"}),
        ("write_file", {"path": "", "content": "x"}),
        ("edit_file", {"path": ".", "old_text": "a", "new_text": "b"}),
        ("glob", {"pattern": "[["}),
        ("", {}),
    ],
)
def test_bad_calls_come_back_as_error_outputs_and_never_raise(
    ws: Workspace, name: str, input: Any
) -> None:
    out = ws.run(name, input)
    assert isinstance(out, ToolOutput)
    if out.is_error:
        assert out.text.startswith("Error: ")


def test_glob_normalizes_dot_dot_that_stays_inside(ws: Workspace) -> None:
    (ws.root / "sub").mkdir()
    (ws.root / "a.py").write_text("", encoding="utf-8")
    assert run_ok(ws, "glob", pattern="sub/../*.py") == "a.py"
