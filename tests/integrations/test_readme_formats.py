"""The snippets of docs/formats.md run as written: the format ones offline,
the client ones against the stub API through the SDKs' own environment variables, in order
(the streaming snippet continues the drop-in one's ``client`` and ``messages``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from context_compact import check
from stub_api import Reply, StubAPI, ToolCall

PAGE = Path(__file__).resolve().parents[2] / "docs/formats.md"


def snippets() -> list[str]:
    section = PAGE.read_text()
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[StubAPI]:
    monkeypatch.chdir(tmp_path)
    with StubAPI(Reply(text="notes.txt holds a shopping list."), Reply(text="Eggs.")) as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-stub")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        monkeypatch.delenv("ANTHROPIC_API_URL", raising=False)
        yield api


def test_the_readme_shows_the_format_the_client_and_the_streaming_snippets() -> None:
    found = snippets()
    assert len(found) == 5
    assert "format=" in found[0] and "to_canonical" in found[1]
    assert "compacting(" in found[2] and ".stream(" in found[3]
    assert "tool_runner(" in found[4]


def test_the_format_snippets_run_as_written_and_give_the_callers_format_back() -> None:
    scope: dict[str, Any] = {}
    exec(compile(snippets()[0], str(PAGE), "exec"), scope)
    assert [m["role"] for m in scope["history"]] == ["system", "user", "assistant", "tool"]
    assert scope["history"][2]["tool_calls"][0]["id"] == "call_1"
    exec(compile(snippets()[1], str(PAGE), "exec"), {})


def test_the_client_and_streaming_snippets_run_as_written_and_send_valid_requests(
    stub: StubAPI,
) -> None:
    scope: dict[str, Any] = {"print": lambda *a, **k: None}
    exec(compile(snippets()[2], str(PAGE), "exec"), scope)
    exec(compile(snippets()[3], str(PAGE), "exec"), scope)
    assert len(stub.bodies) == 2
    assert stub.bodies[1].get("stream") is True
    assert [check(body["messages"]) for body in stub.bodies] == [[], []]
    # The streamed answer was appended as the snippet writes it.
    assert scope["messages"][-1]["content"][0].text == "Eggs."


def test_the_tool_runner_snippet_continues_the_conversation_through_the_compacting_client(
    stub: StubAPI, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("eggs, milk")
    call = ToolCall("read_file", {"path": "notes.txt"}, id="toolu_notes")
    stub.enqueue(Reply(tool_calls=(call,)), Reply(text="Eggs and milk."))
    scope: dict[str, Any] = {"print": lambda *a, **k: None}
    for snippet in (snippets()[2], snippets()[3], snippets()[4]):
        exec(compile(snippet, str(PAGE), "exec"), scope)
    assert len(stub.bodies) == 4
    assert [check(body["messages"]) for body in stub.bodies] == [[]] * 4
    assert stub.bodies[3]["messages"][-1]["content"][0]["content"] == "eggs, milk"
    assert scope["message"].content[0].text == "Eggs and milk."
