"""The ledger's shell reads (``session/shell_reads.py``) and its hashes after in-place edits
(``calls.applied``): a plain read through a shell tool is a file read, and an edit's hash is
the resulting content's when it is certain, else none, never a wrong one."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_compact.agent.tools import Workspace
from context_compact.session import ledger
from context_compact.session.calls import MAX_KNOWN_CHARS, digest, read_call
from context_compact.session.ledger_rules import LedgerRules


def pair(use_id: str, name: str, inputs: dict[str, Any], text: str) -> list[dict[str, Any]]:
    use = {"type": "tool_use", "id": use_id, "name": name, "input": inputs}
    done = {"type": "tool_result", "tool_use_id": use_id, "content": text}
    return [{"role": "assistant", "content": [use]}, {"role": "user", "content": [done]}]


# -- shell reads -------------------------------------------------------------------------

READS = [
    ("bash", {"command": "cat src/a.py"}, ["src/a.py"], None),
    ("Bash", {"command": "cat -n src/a.py 2>&1"}, ["src/a.py"], None),
    ("bash", {"command": "cat a.py b.py"}, ["a.py", "b.py"], None),
    ("bash", {"command": "sed -n '10,20p' src/a.py"}, ["src/a.py"], [10, 20]),
    ("bash", {"command": "sed -n 7p a.py"}, ["a.py"], [7, 7]),
    ("bash", {"command": "sed -n '30,$p' a.py"}, ["a.py"], [30, None]),
    ("bash", {"command": "head -n 40 a.py"}, ["a.py"], [1, 40]),
    ("bash", {"command": "head -25 a.py"}, ["a.py"], [1, 25]),
    ("bash", {"command": "head a.py"}, ["a.py"], [1, 10]),
    ("bash", {"command": "tail -n 15 log.txt"}, ["log.txt"], [-15, None]),
    ("bash", {"command": "tail -n +80 a.py"}, ["a.py"], [80, None]),
    ("bash", {"command": "nl -ba a.py | sed -n '5,9p'"}, ["a.py"], [5, 9]),
    ("bash", {"command": "cat -n a.py | head -n 50"}, ["a.py"], [1, 50]),
    ("bash", {"command": "less README.md"}, ["README.md"], None),
    ("bash", {"command": "cd /repo && cat src/x.py"}, ["/repo/src/x.py"], None),
    ("shell", {"command": ["bash", "-lc", "sed -n '1,80p' src/lib.rs"]}, ["src/lib.rs"], [1, 80]),
    ("execute_bash", {"command": "cat /workspace/a.py"}, ["/workspace/a.py"], None),
    ("terminal", {"action": {"command": "head -n 5 setup.cfg"}}, ["setup.cfg"], [1, 5]),
]


@pytest.mark.parametrize(("name", "inputs", "paths", "lines"), READS)
def test_a_plain_read_through_a_shell_tool_is_a_file_read_with_its_line_range(
    name: str, inputs: dict[str, Any], paths: list[str], lines: list[int | None] | None
) -> None:
    kept = ledger.of(pair("t1", name, inputs, "the output"))
    assert list(kept.read) == paths
    assert all(kept.read[p][2] == [lines] for p in paths)
    assert kept.commands_run == 1 and not kept.changed  # still a command that ran


def test_one_files_output_is_hashed_and_several_files_are_not_told_apart() -> None:
    log = [
        *pair("t1", "bash", {"command": "cat a.py"}, "x = 1"),
        *pair("t2", "bash", {"command": "cat b c"}, "x"),
    ]
    kept = ledger.of(log)
    assert kept.read["a.py"][1] == digest("x = 1")
    assert kept.read["b"][1] is None and kept.read["c"][1] is None


NOT_READS = [
    "cat a.py | grep x",  # a filter changes what is shown
    "cat a.py | sort",
    "grep -n x a.py",
    "cat a.py > b.py",  # a write
    "cat a.py && rm a.py",
    "cat <<'EOF'\nhello\nEOF",
    "tail -f server.log",
    "sed -n '/def /p' a.py",
    "sed -n '1,5p' a.py b.py",  # sed numbers two files' lines as one stream
    "less +F server.log",
    "sed -i 's/a/b/' a.py",
    "cat -",
    r"cat my\ file.py",  # said only escaped
    "head -n 5 a.py | sed -n '1,2p'",  # a range of a range
    "cd src && cat a.py",  # a relative directory
    "python -c 'print(1)'",
]


@pytest.mark.parametrize("command", NOT_READS)
def test_a_command_that_is_more_than_a_plain_read_reads_no_file(command: str) -> None:
    kept = ledger.of(pair("t1", "bash", {"command": command}, "out"))
    assert not kept.read


WORDS = st.sampled_from(
    [
        "cat", "sed", "head", "tail", "nl", "less", "more", "tee", "rm", "cd", "-n", "-i",
        "-ba", "-5", "+3", "'1,9p'", "5p", "a.py", "src/b.py", "/repo", "'x y.py'", "x\\ y",
        "|", "&&", ";", ">", ">>", "2>&1", "2>/dev/null", "<<", "EOF", "\n", "'", '"', "$",
        "-", "--lines=4", "*** Begin Patch", "open", "create", "edit 1:2\n",
    ]
)  # fmt: skip


def _said(path: str, command: str) -> bool:
    """``path`` is in ``command``, or a directory and a path both in it, joined."""
    if path in command:
        return True
    return any(
        path[:i] in command and path[i + 1 :] in command for i, c in enumerate(path) if c == "/"
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(WORDS, st.text(max_size=12)), max_size=12))
def test_any_shell_command_is_read_without_error_and_names_only_paths_it_says(
    words: list[str],
) -> None:
    command = " ".join(words)
    call = read_call("bash", {"command": command}, LedgerRules(), None)
    assert call is not None
    # Every path is said in the command (a path after ``cd DIR &&`` joined to DIR).
    assert all(_said(p, command) for p in call.paths), (command, call.paths)
    ledger.of(pair("t1", "bash", {"command": command}, "out"))


# -- hashes after in-place edits -----------------------------------------------------------

WRITE = pair("w", "Write", {"file_path": "/r/a.py", "content": "x = 1\ny = 2\n"}, "ok")


def edit(use_id: str, name: str = "Edit", **inputs: Any) -> list[dict[str, Any]]:
    return pair(use_id, name, {"file_path": "/r/a.py", **inputs}, "The file has been updated.")


@pytest.mark.parametrize(
    ("changes", "after"),
    [
        (edit("e", old_string="y = 2", new_string="y = 3"), "x = 1\ny = 3\n"),
        (edit("e", old_string=" = ", new_string=": ", replace_all=True), "x: 1\ny: 2\n"),
        (
            edit("e", "MultiEdit", edits=[
                {"old_string": "x = 1", "new_string": "x = 5"},
                {"old_string": "x = 5\ny", "new_string": "z"},
            ]),
            "z = 2\n",
        ),
        (
            pair("e", "str_replace_editor",
                 {"command": "str_replace", "path": "/r/a.py", "old_str": "x", "new_str": "w"},
                 "edited"),
            "w = 1\ny = 2\n",
        ),
        (
            pair("e", "edit_file", {"path": "/r/a.py", "old_text": "1", "new_text": "one"}, "ok"),
            "x = one\ny = 2\n",
        ),
    ],
)  # fmt: skip
def test_an_edit_to_a_content_the_ledger_saw_written_records_the_resulting_hash(
    changes: list[dict[str, Any]], after: str
) -> None:
    kept = ledger.of([*WRITE, *changes])
    assert kept.changed["/r/a.py"][1:] == ["edited", digest(after), 2]
    assert kept.known["/r/a.py"] == after


BIG = "y = 2\n" + "#" * MAX_KNOWN_CHARS  # one line past what the ledger keeps
OTHER_NAME = {"file_path": "a.py", "old_string": "x", "new_string": "z"}


@pytest.mark.parametrize(
    "before",
    [
        [],  # never written: its content is not known
        pair("r", "Read", {"file_path": "/r/a.py"}, "     1\tx = 1\n     2\ty = 2"),  # a read
        [*WRITE, *pair("s", "Bash", {"command": "sed -i 's/x/q/' /r/a.py"}, "")],
        [*WRITE, *pair("p", "Bash", {"command": "pytest -q"}, "1 passed in 0.1s")],
        [*WRITE, *edit("n", "NotebookEdit", new_source="x")],  # an edit it cannot apply
        [*WRITE, *pair("o", "Edit", OTHER_NAME, "ok")],  # the same name, another path
        pair("w", "Write", {"file_path": "/r/a.py", "content": BIG}, "ok"),
        pair("w", "Write", {"file_path": "/r/a.py", "content": "x = 1\r\ny = 2\r\n"}, "ok"),
    ],
)  # fmt: skip
def test_an_edit_whose_result_is_not_certain_records_no_hash(before: list[dict[str, Any]]) -> None:
    kept = ledger.of([*before, *edit("e", old_string="y = 2", new_string="y = 3")])
    assert kept.changed["/r/a.py"][1:3] == ["edited", None]
    assert "/r/a.py" not in kept.known


@pytest.mark.parametrize("old", ["nowhere", " = "])  # found no time, found twice
def test_an_edit_the_ledger_cannot_place_once_records_no_hash(old: str) -> None:
    kept = ledger.of([*WRITE, *edit("e", old_string=old, new_string="!")])
    assert kept.changed["/r/a.py"][2] is None


def test_a_failed_edit_leaves_the_known_content_for_the_next_one() -> None:
    failed = pair("f", "Edit", {"file_path": "/r/a.py", "old_string": "q", "new_string": "r"},
                  "<tool_use_error>String to replace not found</tool_use_error>")  # fmt: skip
    kept = ledger.of([*WRITE, *failed, *edit("e", old_string="x", new_string="v")])
    assert kept.changed["/r/a.py"][2] == digest("v = 1\ny = 2\n")


def test_the_known_contents_survive_a_checkpoint_so_a_resume_hashes_the_same() -> None:
    kept = ledger.of(WRITE)
    back = ledger.Ledger.from_json(json.loads(json.dumps(kept.as_json())))
    for each in (kept, back):
        for seq, message in enumerate(edit("e", old_string="x", new_string="v"), start=2):
            each.add(seq, message)
    assert back.as_json() == kept.as_json() and kept.changed["/r/a.py"][2] is not None


OPS = st.lists(
    st.tuples(
        st.sampled_from(["write", "edit", "sed", "cat"]),
        st.sampled_from(["a.txt", "b.txt"]),
        st.text(alphabet="xyz\n", max_size=12),
        st.text(alphabet="xyz\n", max_size=4),
    ),
    max_size=12,
)


@settings(max_examples=40, deadline=None)
@given(OPS)
def test_every_hash_the_ledger_records_is_the_files_real_content(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, str, str, str]]
) -> None:
    # Our own agent's tools carry out each call on disk; the ledger reads the log.
    root = tmp_path_factory.mktemp("work")
    tools, log = Workspace(root), []
    for at, (op, path, text, other) in enumerate(ops):
        if op == "write":
            name, inputs = "write_file", {"path": path, "content": text}
        elif op == "edit":
            name, inputs = "edit_file", {"path": path, "old_text": other, "new_text": text}
        elif op == "sed":
            name, inputs = "bash", {"command": f"sed -i 's/x/y/' {path}"}
        else:
            name, inputs = "bash", {"command": f"cat {shlex.quote(path)}"}
        out = tools.run(name, inputs)
        use = {"type": "tool_use", "id": f"t{at}", "name": name, "input": inputs}
        done = {"type": "tool_result", "tool_use_id": f"t{at}", "content": out.text}
        if out.is_error:
            done["is_error"] = True
        log += [{"role": "assistant", "content": [use]}, {"role": "user", "content": [done]}]
    kept = ledger.of(log)
    for path, (_, _, sha, _) in kept.changed.items():
        if sha is not None:
            assert sha == digest(Path(root, path).read_text(encoding="utf-8")), path
