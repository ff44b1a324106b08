"""Hardening cases fixed so far (issue 10 is larger; these are the ones landed with issue 8)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from api_rules import final_turn_opener
from context_compact import (
    Compactor,
    FileStore,
    InvalidHistory,
    MemoryStore,
    Policy,
    SqliteStore,
    check,
)
from context_compact.agent.loop import Compaction
from context_compact.cli.agent import Printer
from context_compact.events import CompactionEvent as Event
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session
from histories import call, user

TWICE = [
    user("t"),
    call("a"),
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "1"},
            {"type": "tool_result", "tool_use_id": "a", "content": "2"},
        ],
    },
]


def test_two_results_for_one_id_in_one_message_are_a_violation() -> None:
    (violation,) = check(TWICE)
    assert (violation.index, violation.rule) == (2, "duplicate_result")


@pytest.mark.parametrize("policy", [Policy.seed(echo=False), Policy.default()])
def test_two_results_for_one_id_are_refused_by_prepare_under_both_presets(policy: Any) -> None:
    with pytest.raises(InvalidHistory, match="message 2: duplicate_result"):
        Compactor(policy, MemoryStore()).prepare(TWICE, "t")


def test_a_first_request_with_an_image_stays_in_view_through_compaction() -> None:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    first = {
        "role": "user",
        "content": [{"type": "text", "text": "fix what the screenshot shows"}, image],
    }
    c = Compactor(Policy.default(context_limit=5_000), MemoryStore(), BenchSummarizer())
    w = synthetic_session(80, seed=3)
    messages: list[Any] = [first]
    for turn in w.turns:
        messages = c.prepare(messages, "fix what the screenshot shows")
        assert messages[0] == first
        messages += [turn.assistant, turn.results]
    assert any(e.stage == "summarize" for e in c.events)


@pytest.mark.parametrize("kind", ["files", "sqlite"])
def test_a_lone_surrogate_in_a_large_result_is_saved_and_read_back_exactly(
    tmp_path: Path, kind: str
) -> None:
    store: Any = FileStore(tmp_path) if kind == "files" else SqliteStore(tmp_path / "s.db")
    text = "\ud800 invalid UTF-16 from a tool " + "output line\n" * 3_000
    history = [
        user("t"),
        call("a"),
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": text}]},
    ]
    view = Compactor(Policy.default(context_limit=4_000), store).prepare(history, "t")
    persisted = view[-1]["content"][0]["content"]
    path = persisted.split("Full output: ")[1].split("\n")[0]
    assert store.read_text(path) == text
    if kind == "sqlite":
        store.close()


def test_compaction_lines_in_the_cli_keep_their_brackets() -> None:
    out = io.StringIO()
    printer = Printer(Console(file=out, width=200), Path("/work"))
    printer(Compaction(Event("compact_history", 9_000, 1_000, "tokens", (), "[auto compact]")))
    assert "[auto compact]" in out.getvalue()


def text_blocks_result(tool_id: str, lines: int) -> dict[str, Any]:
    parts = [{"type": "text", "text": f"def f{i}():\n    return {i}"} for i in range(lines)]
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": parts}],
    }


def test_a_result_made_of_text_blocks_is_saved_and_previewed_as_text() -> None:
    store = MemoryStore()
    history = [user("t"), call("a"), text_blocks_result("a", 2_000)]
    view = Compactor(Policy.default(context_limit=6_000), store).prepare(history, "t")
    preview = view[-1]["content"][0]["content"]
    assert "Preview:\ndef f0():\n    return 0" in preview
    assert "{'type'" not in preview
    path = preview.split("Full output: ")[1].split("\n")[0]
    saved = store.read_text(path)
    assert saved.splitlines()[:2] == ["def f0():", "    return 0"]
    assert saved.count("\n") > 2_000


def test_a_result_holding_an_image_is_never_turned_into_text() -> None:
    png = {"type": "base64", "media_type": "image/png", "data": "A" * 60_000}
    shot = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "a",
                "content": [{"type": "image", "source": png}],
            }
        ],
    }
    c = Compactor(Policy.default(context_limit=200_000), MemoryStore())
    view = c.prepare([user("t"), call("a"), shot], "t")
    assert view[-1] == shot


def thinking_session(requests: int, steps: int) -> list[list[dict[str, Any]]]:
    """Requests, each answered by a tool loop whose first assistant message thinks (as
    extended thinking without interleaving answers): the steps to append, in order."""
    w = synthetic_session(requests * steps, seed=5)
    out: list[list[dict[str, Any]]] = []
    for r in range(requests):
        for k in range(steps):
            turn = w.turns[r * steps + k]
            assistant = turn.assistant
            if k == 0:
                think = {"type": "thinking", "thinking": f"plan {r}", "signature": f"sig{r}"}
                assistant = {**assistant, "content": [think, *assistant["content"]]}
            step = [assistant, turn.results]
            if k == steps - 1:
                step.append(user(f"request {r + 1}: go on"))
            out.append(step)
    return out


def test_the_turn_in_progress_still_opens_with_its_thinking_block_after_compaction() -> None:
    c = Compactor(Policy.default(context_limit=6_000), MemoryStore(), BenchSummarizer())
    messages: list[Any] = [user("request 0")]
    checked = 0
    for step in thinking_session(8, 9):
        messages = c.prepare(messages, "go on")
        asked = [
            i
            for i, m in enumerate(messages)
            if m["role"] == "user"
            and not any(b.get("type") == "tool_result" for b in m["content"] if isinstance(b, dict))
        ]
        after = [m for m in messages[asked[-1] + 1 :] if m["role"] == "assistant"]
        if after:
            assert after[0]["content"][0]["type"] == "thinking"
            checked += 1
        assistant, *rest = step
        if final_turn_opener(messages) is None and assistant["content"][0]["type"] != "thinking":
            # The view ends a turn (a summary closed it): the model thinks first, as the API
            # makes it do with thinking on.
            think = {"type": "thinking", "thinking": "again", "signature": "sig-again"}
            assistant = {**assistant, "content": [think, *assistant["content"]]}
        messages += [assistant, *rest]
    assert checked > 20 and any(e.stage == "summarize" for e in c.events)
