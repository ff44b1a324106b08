"""Formats the loaders gained with ``import``: Anthropic messages, bare OpenHands event lists,
Claude Code 2.1.x line types; and ``load_all`` naming the files it could not load."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from context_compact.loaders import Failure, load_all, load_file


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def jsonl(records: list[Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


ANTHROPIC = [
    {"role": "user", "content": "fix it"},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hm", "signature": "sig"},
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "a.py", "is_error": True},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "x"}},
        ],
    },
]


def test_anthropic_messages_keep_their_tool_pairs_and_images_and_drop_thinking(
    tmp_path: Path,
) -> None:
    document = {"system": "be brief", "messages": ANTHROPIC}
    (session,) = load_file(write(tmp_path / "h.json", json.dumps(document)))
    assert session.format == "anthropic" and session.system == "be brief"
    assert session.skipped == 0
    assert session.messages[1]["content"] == ANTHROPIC[1]["content"][1:]
    assert session.messages[2]["content"] == ANTHROPIC[2]["content"]


def test_anthropic_json_lines_with_a_system_line_load_the_same(tmp_path: Path) -> None:
    lines = [{"role": "system", "content": "be brief"}, *ANTHROPIC]
    (from_lines,) = load_file(write(tmp_path / "h.jsonl", jsonl(lines)))
    (from_json,) = load_file(write(tmp_path / "h.json", json.dumps(ANTHROPIC)))
    assert from_lines.format == from_json.format == "anthropic"
    assert from_lines.messages == from_json.messages and from_lines.system == "be brief"


EVENTS = [
    {"id": 0, "source": "agent", "action": "system", "args": {"content": "You are OpenHands."}},
    {"id": 1, "source": "user", "action": "message", "args": {"content": "fix the bug"}},
    {
        "id": 2,
        "source": "agent",
        "action": "run",
        "args": {"command": "ls", "thought": "Listing."},
    },
    {"id": 3, "source": "agent", "observation": "run", "content": "a.py", "cause": 2},
    {"id": 4, "source": "agent", "action": "finish", "args": {"thought": "Done."}},
]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("bare.json", json.dumps(EVENTS)),
        ("wrapped.json", json.dumps({"history": EVENTS})),
        ("events.jsonl", jsonl(EVENTS)),
    ],
)
def test_openhands_events_load_with_or_without_their_history_wrapper(
    tmp_path: Path, name: str, text: str
) -> None:
    (session,) = load_file(write(tmp_path / name, text))
    assert session.format == "openhands" and session.system == "You are OpenHands."
    assert session.skipped == 0
    uses = [b for m in session.messages for b in m["content"] if b["type"] == "tool_use"]
    assert [u["name"] for u in uses] == ["run", "finish"]
    assert session.messages[2]["content"][0]["content"] == "a.py"


def test_claude_code_2_1_line_types_are_not_counted_as_skipped(tmp_path: Path) -> None:
    base = {"sessionId": "s", "parentUuid": None, "isSidechain": False}
    lines = [
        {**base, "type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}},
        {**base, "type": "attachment", "uuid": "a1", "attachment": {"type": "skill_listing"}},
        {
            **base,
            "type": "assistant",
            "uuid": "u2",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [{"type": "text", "text": "yo"}],
            },
        },
        {"type": "last-prompt", "lastPrompt": "hi", "sessionId": "s"},
        {"type": "ai-title", "aiTitle": "greeting", "sessionId": "s"},
        {"type": "permission-mode", "permissionMode": "default", "sessionId": "s"},
    ]
    (session,) = load_file(write(tmp_path / "s.jsonl", jsonl(lines)))
    assert session.format == "claude_code" and session.skipped == 0
    assert [m["role"] for m in session.messages] == ["user", "assistant"]


def test_load_all_names_every_file_it_could_not_load(tmp_path: Path) -> None:
    write(tmp_path / "good.json", json.dumps(ANTHROPIC))
    write(tmp_path / "config.json", json.dumps({"title": "not a log"}))
    write(tmp_path / "torn.json", '[{"role": "user",')
    failures: list[Failure] = []
    sessions = load_all(tmp_path, failures=failures)
    assert [s.name for s in sessions] == ["good"]
    reasons = {Path(f.path).name: f.reason for f in failures}
    assert set(reasons) == {"config.json", "torn.json"}
    assert "keys ['title']" in reasons["config.json"] and "line 1" in reasons["torn.json"]
