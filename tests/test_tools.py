"""The read-back tools users hand their model: the definitions in both formats, and
``ReadBack`` running them over a real session (a persisted result read back in pages, a
recall, a path outside the work directory refused)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from context_compact import Compactor, FileStore, Policy
from context_compact.messages import block_type, blocks, result_text
from context_compact.tools import ReadBack, anthropic_tools, openai_tools


def test_the_definitions_are_the_same_tools_in_both_formats() -> None:
    anthropic = anthropic_tools()
    openai = openai_tools()
    assert [t["name"] for t in anthropic] == ["read_file", "recall"]
    assert [t["function"]["name"] for t in openai] == ["read_file", "recall"]
    for a, o in zip(anthropic, openai, strict=True):
        assert o["type"] == "function" and o["function"]["parameters"] == a["input_schema"]
        assert a["input_schema"]["required"] in (["path"], ["query"])


def session(tmp_path: Path) -> tuple[Compactor, str, list[Any]]:
    compactor = Compactor(Policy.default(context_limit=20_000), FileStore(str(tmp_path)))
    big = "\n".join(f"entry {i:05d} " + "data " * 12 for i in range(3_000))
    use = {"type": "tool_use", "id": "t0", "name": "bash", "input": {"command": "cat log"}}
    messages: list[Any] = [
        {"role": "user", "content": "what is at the end of the log?"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t0", "content": big}]},
    ]
    return compactor, big, compactor.prepare(messages, "what is at the end of the log?")


def test_read_file_pages_a_persisted_result_to_its_last_line(tmp_path: Path) -> None:
    compactor, big, view = session(tmp_path)
    marker = result_text(next(b for b in blocks(view[-1]) if block_type(b) == "tool_result"))
    path = re.findall(r"\S+/sha256-[0-9a-f]+\.txt", marker)[0]
    tools = ReadBack(compactor, root=tmp_path)
    pages, offset = [], 1
    while True:
        page = tools.run("read_file", {"path": path, "offset": offset, "limit": 1_000})
        pages.append(page)
        following = re.search(r"continue with offset=(\d+)\)$", page)
        if following is None:
            break
        offset = int(following.group(1))
    assert len(pages) == 3
    assert "".join(p.split("\n... (")[0] for p in pages) == big


def test_recall_answers_from_the_session_log(tmp_path: Path) -> None:
    compactor, _big, _ = session(tmp_path)
    answer = ReadBack(compactor, root=tmp_path).run("recall", {"query": "entry 02999"})
    assert "entry 02999" in answer


def test_a_path_outside_the_work_directory_is_refused_in_one_line(tmp_path: Path) -> None:
    compactor, _, _ = session(tmp_path / "work")
    (tmp_path / "secret.txt").write_text("SECRET", encoding="utf-8")
    answer = ReadBack(compactor, root=tmp_path / "work").run("read_file", {"path": "../secret.txt"})
    assert answer.startswith("error: read_file:") and "SECRET" not in answer
    assert ReadBack(compactor).run("write_file", {}).startswith("error: no tool")


def test_the_notes_tool_is_offered_on_request_in_both_formats() -> None:
    anthropic = anthropic_tools(notes=True)
    openai = openai_tools(notes=True)
    assert [t["name"] for t in anthropic] == ["read_file", "recall", "notes"]
    assert [t["function"]["name"] for t in openai] == ["read_file", "recall", "notes"]
    assert openai[-1]["function"]["parameters"] == anthropic[-1]["input_schema"]
    assert anthropic[-1]["input_schema"]["required"] == ["note"]


def test_a_note_through_read_back_is_acknowledged_and_shown_after_the_next_summary(
    tmp_path: Path,
) -> None:
    compactor = Compactor(
        Policy.default(context_limit=12_000, summarize_ahead=False), FileStore(str(tmp_path))
    )
    tools = ReadBack(compactor, root=tmp_path)
    assert tools.handles("notes")
    assert tools.run("notes", {"note": ""}).startswith("error: notes: nothing noted")
    note = "The flaky test is tests/test_net.py::test_retry; the fix is in client.py."
    messages: list[Any] = [{"role": "user", "content": "fix the flaky test"}]
    for i in range(30):
        name, inputs = ("notes", {"note": note}) if i == 0 else ("bash", {"command": f"ls {i}"})
        use = {"type": "tool_use", "id": f"t{i}", "name": name, "input": inputs}
        plan = {"type": "text", "text": f"Step {i}: looking further. " * 60}
        messages.append({"role": "assistant", "content": [plan, use]})
        answer = tools.run(name, inputs) if tools.handles(name) else f"{i}\n" * 600
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": answer}
        sent = [*messages, {"role": "user", "content": [result]}]
        messages = compactor.prepare(sent, "fix the flaky test")
    assert any(e.stage == "summarize" for e in compactor.events)
    summary = next(str(m["content"]) for m in messages if "Your notes" in str(m["content"]))
    assert note in summary
