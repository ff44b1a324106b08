"""Every loader says what it skipped: a document format read from JSON Lines (OpenAI chat,
Anthropic messages) counts the lines that are not JSON as the line formats (Claude Code,
Codex, OpenHands) do, and ``import`` names them by line number in its output and ``--json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from context_compact.cli import main
from context_compact.loaders import load_file

CHAT = [
    {"role": "user", "content": "fix the tax bug"},
    {"role": "assistant", "content": "looking"},
    {"role": "user", "content": "thanks"},
    {"role": "assistant", "content": "done"},
]
ANTHROPIC = [
    {"role": "user", "content": [{"type": "text", "text": "fix the tax bug"}]},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"c": "ls"}}],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
]


def damaged(tmp_path: Path, messages: list[dict[str, object]]) -> Path:
    """The messages as JSON Lines with a garbage line 2 and a torn last line (6)."""
    lines = [json.dumps(m) for m in messages]
    lines.insert(1, "this line is not JSON")
    lines.append(json.dumps({"role": "user", "content": "cut off"})[:20])
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("messages", "fmt"), [(CHAT, "openai_chat"), (ANTHROPIC, "anthropic")], ids=["chat", "anth"]
)
def test_a_chat_jsonl_with_a_garbage_line_and_a_torn_last_line_counts_both_as_skipped(
    tmp_path: Path, messages: list[dict[str, object]], fmt: str
) -> None:
    (session,) = load_file(damaged(tmp_path, messages))
    assert session.format == fmt
    assert session.notes.get("unparseable_line") == 2
    assert session.skipped == sum(session.notes.values())


@pytest.mark.parametrize("messages", [CHAT, ANTHROPIC], ids=["chat", "anth"])
def test_import_names_the_skipped_lines_of_a_chat_jsonl_in_its_output_and_json(
    tmp_path: Path, messages: list[dict[str, object]]
) -> None:
    path = damaged(tmp_path, messages)
    work = tmp_path / "work"
    work.mkdir()
    out = CliRunner().invoke(main, ["import", str(path), "--workdir", str(work)])
    assert out.exit_code == 0, out.output
    assert "not JSON: line 2, 6" in out.output
    again = CliRunner().invoke(main, ["import", str(path), "--workdir", str(work), "--json"])
    (imported,) = json.loads(again.output)["sessions"]
    assert imported["bad_lines"] == [2, 6]
    assert imported["notes"]["unparseable_line"] == 2
