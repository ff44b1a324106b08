"""recall by a command: the call comes back with its result, and a command is matched as
it was typed (quotes and newlines included), not only as the JSON the log shows."""

from __future__ import annotations

import re
from typing import Any

from context_compact import Compactor, MemoryStore, Policy


def use(tool_id: str, command: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": tool_id, "name": "bash", "input": {"command": command}}
        ],
    }


def result(tool_id: str, text: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": text}],
    }


def session(*messages: dict[str, Any]) -> Compactor:
    c = Compactor(Policy.default(context_limit=50_000), MemoryStore())
    c.prepare([{"role": "user", "content": "run the tests"}, *messages], "run the tests")
    return c


def test_a_command_recalled_comes_back_with_the_result_it_gave() -> None:
    c = session(use("t1", "pytest tests/x"), result("t1", "E   KeyError: 'rate'\n1 failed"))
    page = c.recall("pytest tests/x")
    assert page.hits == 1
    assert "KeyError: 'rate'" in page.text


def test_a_command_with_quotes_and_newlines_is_found_as_typed() -> None:
    command = 'grep -rn "tax rate" src\necho done'
    c = session(use("t1", command), result("t1", "src/tax.py:3: rate = 0.2"))
    assert "src/tax.py:3" in c.recall('grep -rn "tax rate" src').text


def test_a_result_that_matches_itself_is_one_hit_not_two() -> None:
    c = session(use("t1", "make build"), result("t1", "make build: ok"))
    assert c.recall("make build").hits == 2
    assert c.recall("make build").text.count("make build: ok") == 1


def test_a_command_nobody_ran_finds_nothing() -> None:
    c = session(use("t1", "make build"), result("t1", "ok"))
    assert c.recall("make test").hits == 0


def test_past_the_newest_calls_a_recalled_call_names_its_id_and_that_recalls_its_result() -> None:
    from context_compact.session.recall import PAIRED_CALLS

    calls = PAIRED_CALLS + 4
    steps = [m for i in range(calls) for m in (use(f"t{i}", "pytest"), result(f"t{i}", f"run {i}"))]
    c = session(*steps)
    page = c.recall("pytest", limit=1_000_000)
    assert page.hits == calls
    newest = [f"run {i}" for i in range(4, calls)]
    assert all(text in page.text for text in newest)
    assert "run 0" not in page.text
    assert re.search(r"^--- its result: recall t0 · [0-9a-f]{12} ---$", page.text, re.M)
    assert "run 0" in c.recall("t0").text
