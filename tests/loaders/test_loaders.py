"""The trajectory loaders: every recorded session loads into a valid canonical history.

Two kinds of tests:

* the trajectory pack (``tests/data/trajectories``, copied into the repository, or the
  directory named by ``CONTEXT_COMPACT_TRAJECTORIES``): every file loads, every session passes the
  history rules (checked here by ``violations``, written from the rules, not imported), and
  the tool calls / tool results agree with what the pack's ``SOURCES.md`` documents;
* small hand-written logs in each format, checking the exact conversion and every repair.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from context_compact.loaders import (
    FORMATS,
    Session,
    UnknownFormat,
    detect_format,
    load_all,
    load_file,
    load_session,
)

ENV_VAR = "CONTEXT_COMPACT_TRAJECTORIES"
NO_OUTPUT = "(no output recorded)"


def trajectories_dir() -> Path:
    configured = os.environ.get(ENV_VAR)
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parents[1] / "data" / "trajectories"


TRAJECTORIES = trajectories_dir()


def trajectory_files() -> list[Any]:
    if not TRAJECTORIES.is_dir():
        reason = f"no trajectory pack at {TRAJECTORIES} (set {ENV_VAR} to its directory)"
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="no-pack")]
    files = sorted(
        p
        for p in TRAJECTORIES.rglob("*")
        if p.is_file()
        and p.suffix != ".md"
        and not any(part.startswith(".") for part in p.relative_to(TRAJECTORIES).parts)
    )
    return [pytest.param(p, id=p.relative_to(TRAJECTORIES).as_posix()) for p in files]


@dataclasses.dataclass(frozen=True)
class Documented:
    tool_calls: int
    total_chars: int
    largest_output: int


def documented() -> dict[str, Documented]:
    """SOURCES.md rows by path relative to the trajectories directory."""
    sources = TRAJECTORIES / "SOURCES.md"
    rows: dict[str, Documented] = {}
    if not sources.is_file():
        return rows
    header: list[str] | None = None
    for line in sources.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if "local path" in cells:
            header = cells
            continue
        if header is None or len(cells) != len(header) or not cells[0].startswith("`"):
            continue
        row = dict(zip(header, cells, strict=True))
        path = row["local path"].strip("`")
        path = path.split("trajectories/", 1)[-1]
        try:
            rows[path] = Documented(
                _number(row["tool calls"]),
                _number(row["total chars"]),
                _number(row["largest tool output"]),
            )
        except (KeyError, ValueError):
            continue
    return rows


def _number(cell: str) -> int:
    return int(cell.replace(",", "").split()[0])


@functools.cache
def loaded(path: Path) -> list[Session]:
    return load_file(path)


def violations(messages: Any) -> list[str]:
    """Every breach of the canonical history rules (see the task's validity rules)."""
    if not isinstance(messages, list):
        return ["not a list"]
    found: list[str] = []
    seen: set[str] = set()

    def ids(message: Any, kind: str, key: str) -> list[Any]:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            return []
        return [b.get(key) for b in content if isinstance(b, dict) and b.get("type") == kind]

    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            found.append(f"{i}: not a user/assistant message")
            continue
        role, content = message["role"], message.get("content")
        if isinstance(content, str):
            if not content.strip():
                found.append(f"{i}: blank string content")
            continue
        if not isinstance(content, list) or not content:
            found.append(f"{i}: content is neither a string nor a non-empty list")
            continue
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                good = isinstance(block.get("text"), str) and bool(block["text"].strip())
            elif kind == "tool_use":
                good = (
                    role == "assistant"
                    and isinstance(block.get("id"), str)
                    and bool(block["id"])
                    and isinstance(block.get("name"), str)
                    and isinstance(block.get("input"), dict)
                )
                if block.get("id") in seen:
                    found.append(f"{i}: tool_use id {block.get('id')!r} repeats")
                seen.add(block.get("id"))
            elif kind == "tool_result":
                good = (
                    role == "user"
                    and isinstance(block.get("tool_use_id"), str)
                    and isinstance(block.get("content"), str)
                )
            else:
                good = False
            if not good:
                found.append(f"{i}: malformed {kind} block in a {role} message")
        results = ids(message, "tool_result", "tool_use_id")
        if results:
            previous = messages[i - 1] if i > 0 else None
            calls = (
                set(ids(previous, "tool_use", "id"))
                if isinstance(previous, dict) and previous.get("role") == "assistant"
                else set()
            )
            for result in results:
                if result not in calls:
                    found.append(f"{i}: tool_result {result!r} answers no call of message {i - 1}")
            if len(results) != len(set(results)):
                found.append(f"{i}: a call is answered twice")
        uses = ids(message, "tool_use", "id")
        if uses and i < len(messages) - 1:
            following = messages[i + 1]
            answered = set(ids(following, "tool_result", "tool_use_id"))
            if following.get("role") != "user":
                answered = set()
            for use in uses:
                if use not in answered:
                    found.append(f"{i}: tool_use {use!r} is not answered in the next message")
    return found


def blocks_of(session: Session, kind: str) -> list[dict[str, Any]]:
    return [
        block
        for message in session.messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == kind
    ]


# ----------------------------------------------------------------------------- the pack


@pytest.mark.parametrize("path", trajectory_files())
def test_file_loads_into_valid_sessions(path: Path) -> None:
    sessions = loaded(path)
    assert sessions, f"{path} gave no session"
    assert detect_format(path) == sessions[0].format
    for session in sessions:
        assert session.format in FORMATS
        assert session.source == str(path)
        assert session.messages, f"{session.name}: empty history"
        assert violations(session.messages) == [], session.name
        assert session.skipped == sum(session.notes.values())
        assert session.system is None or session.system.strip()
    names = [s.name for s in sessions]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("path", trajectory_files())
def test_tool_calls_and_results_match_sources(path: Path) -> None:
    rel = path.relative_to(TRAJECTORIES).as_posix()
    doc = documented().get(rel)
    if doc is None:
        pytest.skip(f"{rel} is not documented in SOURCES.md")
    sessions = loaded(path)
    uses = sum(len(blocks_of(s, "tool_use")) for s in sessions)
    synthetic = sum(s.notes.get("unanswered_tool_use", 0) for s in sessions)
    recorded = sum(len(blocks_of(s, "tool_result")) for s in sessions) - synthetic
    # Fixes and a trailing call the log ends on may cost a few results, never many.
    floor = math.floor(0.9 * doc.tool_calls)
    assert uses >= floor, f"{uses} tool calls, {doc.tool_calls} documented"
    assert uses <= math.ceil(1.1 * doc.tool_calls), "tool calls counted twice?"
    assert recorded >= floor, f"{recorded} recorded tool results, {doc.tool_calls} documented"


@pytest.mark.parametrize("path", trajectory_files())
def test_tool_result_sizes_are_plausible(path: Path) -> None:
    sessions = loaded(path)
    sizes = [
        len(b["content"])
        for s in sessions
        for b in blocks_of(s, "tool_result")
        if b["content"] != NO_OUTPUT
    ]
    assert sum(sizes) <= path.stat().st_size
    doc = documented().get(path.relative_to(TRAJECTORIES).as_posix())
    if doc is None:
        return
    if doc.tool_calls:
        assert sum(sizes) > 0
    assert sum(sizes) <= doc.total_chars, "tool results larger than the whole conversation"
    largest = max(sizes, default=0)
    assert 0.5 * doc.largest_output <= largest <= 1.5 * doc.largest_output + 10


def test_load_all_gives_one_session_per_trajectory() -> None:
    if not TRAJECTORIES.is_dir():
        pytest.skip(f"no trajectory pack at {TRAJECTORIES}")
    sessions = load_all(TRAJECTORIES)
    expected = sum(len(loaded(p)) for p in _loadable(TRAJECTORIES))
    assert len(sessions) == expected
    by_source: dict[str, int] = {}
    for session in sessions:
        by_source[session.source] = by_source.get(session.source, 0) + 1
    for source, count in by_source.items():
        if source.endswith("multi_swe_bench-examples-output.jsonl"):
            assert count == 3  # one instance per line


def test_sources_table_is_read() -> None:
    if not (TRAJECTORIES / "SOURCES.md").is_file():
        pytest.skip(f"no SOURCES.md in {TRAJECTORIES}")
    rows = documented()
    assert rows, "SOURCES.md has no readable file table"
    assert any((TRAJECTORIES / path).is_file() for path in rows)


def test_violations_catches_each_rule() -> None:
    call = assistant(use("a", "x", {}))
    assert violations([user(text("q")), call, user(result("a", "r"))]) == []
    assert violations([user(text("q")), call]) == []  # the last message may still wait
    assert violations([{"role": "system", "content": "s"}])
    assert violations([call, user(text("no result")), assistant(text("k"))])
    assert violations([user(result("a", "r"))])
    assert violations([call, user(result("a", "r")), call])
    assert violations([call, user({"type": "tool_result", "tool_use_id": "a", "content": []})])
    assert violations([user(text("  "))])


def _loadable(root: Path) -> list[Path]:
    return [
        p
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name.endswith((".jsonl", ".json", ".traj"))
    ]


def test_trajectories_dir_honours_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "/somewhere/else")
    assert trajectories_dir() == Path("/somewhere/else")
    monkeypatch.delenv(ENV_VAR)
    assert trajectories_dir().parts[-3:] == ("tests", "data", "trajectories")


# ----------------------------------------------------------------------------- fixtures


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def use(use_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": use_id, "name": name, "input": arguments}


def result(use_id: str, content: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": use_id, "content": content}


def user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def write_jsonl(path: Path, lines: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n",
        encoding="utf-8",
    )
    return path


def write_json(path: Path, document: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def cc(kind: str, uuid: str, parent: str | None, message: dict[str, Any], **extra: Any) -> Any:
    line = {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": "s1",
        "message": message,
    }
    line.update(extra)
    return line


def cc_assistant(uuid: str, parent: str, msg_id: str, *blocks: Any, **extra: Any) -> Any:
    message = {"id": msg_id, "role": "assistant", "model": "m", "content": list(blocks)}
    return cc("assistant", uuid, parent, message, **extra)


def cc_user(uuid: str, parent: str | None, content: Any, **extra: Any) -> Any:
    return cc("user", uuid, parent, {"role": "user", "content": content}, **extra)


CLAUDE_LINES: list[Any] = [
    {"type": "summary", "summary": "Listing files", "leafUuid": "x"},
    cc_user("u1", None, "list files"),
    cc_user("u1m", "u1", [text("expanded slash command")], isMeta=True),
    cc_assistant("a1", "u1m", "msg_1", {"type": "thinking", "thinking": "hm", "signature": "S"}),
    cc_assistant("a2", "a1", "msg_1", text("Looking.")),
    cc_assistant("a3", "a2", "msg_1", use("t1", "Bash", {"command": "ls"})),
    {"type": "progress", "uuid": "p1", "parentUuid": "a3", "data": {"type": "bash_progress"}},
    cc_user("r1", "a3", [result("t1", "a.txt")], toolUseResult={"stdout": "a.txt"}),
    # Same API response, written after the first tool already ran.
    cc_assistant("a4", "r1", "msg_1", use("t2", "Read", {"file_path": "a.txt"})),
    cc_user(
        "r2",
        "a4",
        [
            {
                "type": "tool_result",
                "tool_use_id": "t2",
                "content": [text("hello"), {"type": "image", "source": {}}],
                "is_error": False,
            }
        ],
    ),
    {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "c0",
        "parentUuid": None,
        "compactMetadata": {"trigger": "manual", "preTokens": 100},
    },
    cc_user("c1", "c0", "Summary: listed files.", isCompactSummary=True),
    cc_assistant("a5", "c1", "msg_2", use("t1", "Bash", {"command": "pwd"})),
    cc_user("r3", "a5", [result("t1", "/w"), result("zzz", "stray")]),
    cc_assistant("a6", "r3", "msg_3", use("t3", "Bash", {"command": "make"})),
    cc_user("u2", "a6", "[Request interrupted by user]"),
    cc_assistant("a7", "u2", "msg_4", text("Stopped."), use("t4", "Bash", {"command": "ls"})),
    {"type": "a-future-line-type", "uuid": "f1"},
    "{not json",
    # An inline Task sub-agent thread (older Claude Code versions).
    cc_user("s1", None, "sub task", isSidechain=True),
    cc_assistant("s2", "s1", "msg_s", text("sub done"), isSidechain=True),
]


def test_claude_code_conversion(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "proj" / "session-1.jsonl", CLAUDE_LINES)
    main, side = load_file(path)
    assert (main.name, main.format, main.system) == ("session-1", "claude_code", None)
    assert main.messages == [
        user(text("list files")),
        assistant(
            text("Looking."),
            use("t1", "Bash", {"command": "ls"}),
            use("t2", "Read", {"file_path": "a.txt"}),
        ),
        user(result("t1", "a.txt"), result("t2", "hello\n[image]")),
        user(text("Summary: listed files.")),
        assistant(use("t1_2", "Bash", {"command": "pwd"})),
        user(result("t1_2", "/w"), text("[tool result for missing call zzz]\nstray")),
        assistant(use("t3", "Bash", {"command": "make"})),
        user(result("t3", NO_OUTPUT), text("[Request interrupted by user]")),
        assistant(text("Stopped."), use("t4", "Bash", {"command": "ls"})),
    ]
    assert dict(main.notes) == {
        "duplicate_id": 1,
        "orphan_tool_result": 1,
        "unanswered_tool_use": 1,
        "unknown_line": 1,
        "unparseable_line": 1,
    }
    assert main.skipped == 5
    assert side.name == "session-1/sidechain-1"
    assert side.messages == [user(text("sub task")), assistant(text("sub done"))]
    assert load_session(path) == main
    assert violations(main.messages) == []


def test_claude_code_subagent_file_is_one_session(tmp_path: Path) -> None:
    lines = [
        cc_user("s1", "elsewhere", "explore", isSidechain=True, agentId="a1"),
        cc_assistant("s2", "s1", "m1", use("t1", "Glob", {"pattern": "*"}), isSidechain=True),
        cc_user("s3", "s2", [result("t1", "x.py")], isSidechain=True),
        cc_assistant("s4", "s3", "m2", text("found x.py"), isSidechain=True),
    ]
    path = write_jsonl(tmp_path / "subagents" / "agent-a1.jsonl", lines)
    (session,) = load_file(path)
    assert session.name == "agent-a1"
    assert session.messages == [
        user(text("explore")),
        assistant(use("t1", "Glob", {"pattern": "*"})),
        user(result("t1", "x.py")),
        assistant(text("found x.py")),
    ]
    assert session.skipped == 0


def cx(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2025-01-01T00:00:00Z", "type": kind, "payload": payload}


def item(**payload: Any) -> dict[str, Any]:
    return cx("response_item", payload)


def test_codex_conversion(tmp_path: Path) -> None:
    shell_output = json.dumps({"output": "a\n", "metadata": {"exit_code": 0}})
    lines = [
        cx("session_meta", {"id": "r1", "cwd": "/w", "instructions": None}),
        item(type="message", role="developer", content=[{"type": "input_text", "text": "Obey."}]),
        item(type="message", role="user", content=[{"type": "input_text", "text": "fix it"}]),
        cx("event_msg", {"type": "user_message", "message": "fix it"}),
        cx("turn_context", {"cwd": "/w", "model": "m"}),
        item(type="reasoning", summary=[{"type": "summary_text", "text": "hm"}], content=None),
        item(type="message", role="assistant", content=[{"type": "output_text", "text": "Two."}]),
        item(type="function_call", name="shell", arguments='{"command": ["ls"]}', call_id="c1"),
        item(type="function_call_output", call_id="c1", output=shell_output),
        item(type="custom_tool_call", name="apply_patch", input="*** Begin Patch", call_id="c2"),
        item(type="custom_tool_call_output", call_id="c2", output="Done"),
        cx("event_msg", {"type": "token_count", "info": None}),
        cx("turn_context", {"cwd": "/w"}),
        item(type="function_call", name="shell", arguments="{not json", call_id="c3"),
        item(type="ghost_snapshot", ghost_commit={"id": "g"}),
        cx("turn_context", {"cwd": "/w"}),
        item(type="message", role="assistant", content=[{"type": "output_text", "text": "Done."}]),
        item(type="web_search_call", status="completed", action={"type": "search", "query": "q"}),
        cx("turn_context", {"cwd": "/w"}),
        item(type="reasoning", summary=[], content=None, encrypted_content="gAAA"),
        cx("event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
    ]
    path = write_jsonl(tmp_path / "rollout-2025-01-01T00-00-00-r1.jsonl", lines)
    (session,) = load_file(path)
    assert (session.name, session.format, session.system) == (
        "rollout-2025-01-01T00-00-00-r1",
        "codex",
        "Obey.",
    )
    assert session.messages == [
        user(text("fix it")),
        assistant(
            text("[reasoning] hm"),
            text("Two."),
            use("c1", "shell", {"command": ["ls"]}),
            use("c2", "apply_patch", {"input": "*** Begin Patch"}),
        ),
        user(result("c1", shell_output), result("c2", "Done")),
        assistant(use("c3", "shell", {"arguments": "{not json"})),
        user(result("c3", NO_OUTPUT)),
        assistant(text("Done.")),
        user(text("[turn aborted: interrupted]")),
    ]
    assert dict(session.notes) == {
        "encrypted_reasoning": 1,
        "unanswered_tool_use": 1,
        "unparsed_arguments": 1,
        "unsupported_item": 1,
    }
    assert dict(session.converted) == {"reasoning_as_text": 1, "turn_aborted_as_text": 1}


def oh_response(response_id: str, content: str, *calls: tuple[str, str, str]) -> dict[str, Any]:
    tool_calls = [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}
        for cid, name, arguments in calls
    ]
    message = {"role": "assistant", "content": content, "tool_calls": tool_calls}
    return {"id": response_id, "choices": [{"index": 0, "message": message}]}


def test_openhands_conversion(tmp_path: Path) -> None:
    r1 = oh_response(
        "r1",
        "Let me look.",
        ("tc1", "execute_bash", '{"command": "ls"}'),
        ("tc2", "str_replace_editor", '{"command": "view", "path": "/a"}'),
    )
    r2 = oh_response("r2", "", ("tc3", "finish", '{"message": "ok"}'))

    def meta(call_id: str, name: str, response: dict[str, Any]) -> dict[str, Any]:
        return {"function_name": name, "tool_call_id": call_id, "model_response": response}

    current = {
        "instance_id": "org__repo-1",
        "instruction": "do it",
        "metadata": {"agent_class": "CodeActAgent"},
        "history": [
            {"id": 0, "source": "agent", "action": "system", "args": {"content": "SYS"}},
            {"id": 1, "source": "user", "action": "message", "args": {"content": "do it"}},
            {"id": 2, "source": "user", "action": "recall", "args": {"query": "do it"}},
            {"id": 3, "source": "environment", "observation": "recall", "cause": 2},
            {
                "id": 4,
                "source": "agent",
                "action": "run",
                "args": {"command": "ls", "thought": "Let me look."},
                "tool_call_metadata": meta("tc1", "execute_bash", r1),
            },
            {
                "id": 5,
                "source": "agent",
                "observation": "run",
                "cause": 4,
                "content": "a b",
                "tool_call_metadata": meta("tc1", "execute_bash", r1),
            },
            {
                "id": 6,
                "source": "agent",
                "action": "read",
                "args": {"path": "/a"},
                "tool_call_metadata": meta("tc2", "str_replace_editor", r1),
            },
            {"id": 7, "source": "agent", "observation": "read", "cause": 6, "content": "file a"},
            {"id": 8, "source": "agent", "observation": "error", "content": "bad parameter"},
            {
                "id": 9,
                "source": "agent",
                "action": "finish",
                "args": {"final_thought": "ok"},
                "tool_call_metadata": meta("tc3", "finish", r2),
            },
        ],
    }
    legacy = {
        "issue": {"owner": "o", "repo": "r", "number": 5, "title": "t", "body": "b"},
        "issue_type": "issue",
        "history": [
            {"content": "Add a license", "action": "message", "wait_for_response": False},
            {"command": "touch LICENSE", "thought": "Creating it.", "action": "run"},
            {"content": "", "command": "touch LICENSE", "exit_code": 0, "observation": "run"},
            [
                {
                    "code": "print(1)",
                    "thought": "",
                    "action": "run_ipython",
                    "kernel_init_code": "x",
                },
                {"content": "1", "code": "print(1)", "observation": "run_ipython"},
            ],
            {"outputs": {}, "thought": "Done.", "action": "finish"},
        ],
        "success": True,
    }
    path = write_jsonl(tmp_path / "output.jsonl", [current, legacy])
    first, second = load_file(path)
    assert (first.name, first.format, first.system) == ("org__repo-1", "openhands", "SYS")
    assert first.messages == [
        user(text("do it")),
        assistant(
            text("Let me look."),
            use("tc1", "execute_bash", {"command": "ls"}),
            use("tc2", "str_replace_editor", {"command": "view", "path": "/a"}),
        ),
        user(result("tc1", "a b"), result("tc2", "file a")),
        user(text("bad parameter")),
        assistant(use("tc3", "finish", {"message": "ok"})),
    ]
    assert first.skipped == 0
    assert (second.name, second.system) == ("o/r#5", None)
    assert second.messages == [
        user(text("Add a license")),
        assistant(text("Creating it."), use("oh_2", "run", {"command": "touch LICENSE"})),
        user(result("oh_2", "")),
        assistant(use("oh_3", "run_ipython", {"code": "print(1)"})),
        user(result("oh_3", "1")),
        assistant(text("Done."), use("oh_4", "finish", {"outputs": {}})),
    ]
    assert load_session(path, index=1) == second


def test_openai_chat_conversion(tmp_path: Path) -> None:
    def call(call_id: str, command: str) -> dict[str, Any]:
        arguments = json.dumps({"command": command})
        return {
            "id": call_id,
            "type": "function",
            "function": {"name": "sh", "arguments": arguments},
        }

    chat = [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url"}]},
        {"role": "assistant", "content": "", "tool_calls": [call("a", "pwd"), call("b", "ls")]},
        {"role": "tool", "tool_call_id": "a", "name": "sh", "content": "/w"},
        {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "x"}]},
        {"role": "tool", "tool_call_id": "nope", "content": "stray"},
        {"role": "assistant", "content": "done"},
    ]
    (session,) = load_file(write_json(tmp_path / "chat.json", chat))
    assert (session.name, session.format, session.system) == ("chat", "openai_chat", "SYS")
    assert session.messages == [
        user(text("hi\n[image]")),
        assistant(use("a", "sh", {"command": "pwd"}), use("b", "sh", {"command": "ls"})),
        user(
            result("a", "/w"), result("b", "x"), text("[tool result for missing call nope]\nstray")
        ),
        assistant(text("done")),
    ]
    assert dict(session.notes) == {"orphan_tool_result": 1}


def test_mini_swe_agent_v1_actions_in_text(tmp_path: Path) -> None:
    output = "<returncode>0</returncode>\n<output>\na\n</output>"
    chat = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "Look.\n\n```mswea_bash_command\nls -la\n```"},
        {"role": "user", "content": output},
        {"role": "assistant", "content": "Two.\n```bash\nls\n```\n```bash\npwd\n```"},
        {"role": "user", "content": "Please always provide EXACTLY ONE action"},
        {"role": "assistant", "content": "```mswea_bash_command\necho done\n```"},
    ]
    (session,) = load_file(write_json(tmp_path / "issue.traj.json", chat))
    assert (session.name, session.format, session.system) == ("issue", "mini_swe_agent", "S")
    assert session.messages == [
        user(text("task")),
        assistant(text("Look."), use("mswea_2", "bash", {"command": "ls -la"})),
        user(result("mswea_2", output)),
        assistant(text(chat[4]["content"])),
        user(text("Please always provide EXACTLY ONE action")),
        assistant(use("mswea_6", "bash", {"command": "echo done"})),
    ]
    assert session.skipped == 0
    assert dict(session.converted) == {"several_actions_as_text": 1}


def test_mini_swe_agent_tool_calls_format(tmp_path: Path) -> None:
    call = {
        "index": 0,
        "id": "c1",
        "type": "function",
        "function": {"name": "bash", "arguments": '{"command": "ls"}'},
    }
    document = {
        "info": {"mini_version": "1.1", "exit_status": "Submitted", "submission": "diff"},
        "trajectory_format": "mini-swe-agent-1.1",
        "instance_id": "x__y-1",
        "messages": [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "Listing.", "tool_calls": [call], "extra": {}},
            {"role": "tool", "tool_call_id": "c1", "content": "a", "extra": {"returncode": 0}},
            {"role": "exit", "content": "diff", "extra": {"exit_status": "Submitted"}},
        ],
    }
    (session,) = load_file(write_json(tmp_path / "x__y-1.traj.json", document))
    assert session.format == "mini_swe_agent"
    assert session.messages == [
        user(text("task")),
        assistant(text("Listing."), use("c1", "bash", {"command": "ls"})),
        user(result("c1", "a")),
    ]
    # The final exit record is part of the format (never sent to the model), not a skip.
    assert session.skipped == 0 and dict(session.notes) == {}


def test_swe_agent_actions_in_text(tmp_path: Path) -> None:
    entry = {"agent": "primary"}
    document = {
        "environment": "swe_main",
        "trajectory": [],
        "info": {"exit_status": "submitted"},
        "history": [
            {**entry, "role": "system", "content": "SYS"},
            {**entry, "role": "user", "content": "DEMO", "is_demo": True},
            {**entry, "role": "user", "content": "issue"},
            {
                **entry,
                "role": "assistant",
                "content": "I will look.\n\n```\nls\n```",
                "thought": "I will look.\n\n",
                "action": "ls\n",
            },
            {**entry, "role": "user", "content": "a.py"},
            {**entry, "role": "assistant", "content": "No command", "thought": "No command"},
            {**entry, "role": "user", "content": "Your output was not formatted correctly"},
            {
                **entry,
                "role": "assistant",
                "content": "Submit.\n```\nsubmit\n```",
                "thought": "Submit.\n",
                "action": "submit\n",
            },
        ],
    }
    (session,) = load_file(write_json(tmp_path / "repo__repo-1.traj", document))
    assert (session.name, session.format, session.system) == ("repo__repo-1", "swe_agent", "SYS")
    assert session.messages == [
        user(text("DEMO")),
        user(text("issue")),
        assistant(text("I will look."), use("swe_3", "bash", {"command": "ls"})),
        user(result("swe_3", "a.py")),
        assistant(text("No command")),
        user(text("Your output was not formatted correctly")),
        assistant(text("Submit."), use("swe_7", "bash", {"command": "submit"})),
    ]
    assert session.skipped == 0


def test_swe_agent_function_calling_with_reused_ids(tmp_path: Path) -> None:
    def step(content: str, command: str) -> dict[str, Any]:
        arguments = json.dumps({"command": command})
        function = {"name": "bash", "arguments": arguments}
        return {
            "role": "assistant",
            "content": content,
            "thought": content,
            "action": command,
            "message_type": "action",
            "tool_calls": [{"id": "c1", "type": "function", "function": function}],
        }

    document = {
        "trajectory": [],
        "replay_config": "{}",
        "history": [
            {"role": "system", "content": "S", "message_type": "system_prompt"},
            {"role": "user", "content": "task", "message_type": "observation"},
            step("Run.", "python r.py"),
            {"role": "tool", "content": "344", "tool_call_ids": ["c1"]},
            step("Again.", "ls"),
            {"role": "tool", "content": "x", "tool_call_ids": ["c1"]},
        ],
    }
    (session,) = load_file(write_json(tmp_path / "replay.traj", document))
    assert session.messages == [
        user(text("task")),
        assistant(text("Run."), use("c1", "bash", {"command": "python r.py"})),
        user(result("c1", "344")),
        assistant(text("Again."), use("c1_2", "bash", {"command": "ls"})),
        user(result("c1_2", "x")),
    ]
    assert dict(session.notes) == {"duplicate_id": 1}


# ----------------------------------------------------------------------------- errors, API


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("notes.json", json.dumps({"foo": 1})),
        ("events.jsonl", json.dumps({"kind": "x"}) + "\n"),
        ("broken.traj", "{not json"),
    ],
)
def test_unknown_format_names_the_file(tmp_path: Path, name: str, body: str) -> None:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    with pytest.raises(UnknownFormat) as raised:
        load_session(path)
    assert str(path) in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_load_all_skips_unknown_files_unless_strict(tmp_path: Path) -> None:
    write_json(tmp_path / "a" / "chat.json", [{"role": "user", "content": "hi"}])
    write_json(tmp_path / "b" / "other.json", {"foo": 1})
    (tmp_path / "README.md").write_text("not a trajectory", encoding="utf-8")
    write_json(tmp_path / ".hidden" / "x.json", {"foo": 1})
    assert [s.name for s in load_all(tmp_path)] == ["chat"]
    with pytest.raises(UnknownFormat, match=r"other\.json"):
        load_all(tmp_path, strict=True)


def test_session_is_a_frozen_record() -> None:
    names = [f.name for f in dataclasses.fields(Session)]
    assert names[:6] == ["name", "format", "system", "messages", "skipped", "source"]
    session = Session("n", "openai_chat", None, [], 0, "p")
    with pytest.raises(dataclasses.FrozenInstanceError):
        session.name = "m"  # type: ignore[misc]
    assert set(FORMATS) >= {"claude_code", "codex", "openhands", "openai_chat", "swe_agent"}
