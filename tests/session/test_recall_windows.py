"""A text recall shows the match: in a long message, a window round each match under a header
naming the message, the characters shown and how to read the whole message from there; the
same in the library, the CLI's ``recall`` and the agent's ``recall`` tool. ``message N`` and
a path still page the whole content from character 0."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from context_compact import Compactor, MemoryStore, Policy
from context_compact.agent.loop import Agent
from context_compact.agent.tools import Workspace
from context_compact.cli import main
from context_compact.engine import PAGE
from context_compact.session.recall import WINDOW, WINDOWS
from context_compact.store import workdir_store
from context_compact.testing.model import ScriptedProvider, tool_call

NEEDLE = "TaxMismatch: expected 1.19 got 1.2"
# A 31 KB tool result whose one interesting line is its last.
LONG = "".join(f"test_case_{i:05d} PASSED in 0.01s\n" for i in range(1_000)) + NEEDLE


def history() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "run the tests"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"c": "t"}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": LONG}],
        },
    ]


def compactor(store: Any = None) -> Compactor:
    c = Compactor(Policy.default(context_limit=50_000), store or MemoryStore())
    c.prepare(history(), "run the tests")
    return c


def test_a_needle_at_the_end_of_a_31kb_result_is_on_the_first_page_of_a_library_recall() -> None:
    assert len(LONG) > 31_000
    page = compactor().recall("TaxMismatch")
    assert NEEDLE in page.text
    assert page.total < PAGE  # one page, not four
    assert page.next_offset is None


def test_even_a_small_page_shows_the_match() -> None:
    page = compactor().recall("TaxMismatch", limit=1200)
    assert NEEDLE in page.text


def test_a_windows_header_names_the_message_the_characters_and_where_the_whole_message_reads() -> (
    None
):
    c = compactor()
    page = c.recall("TaxMismatch")
    header = page.text.splitlines()[0]
    found = re.search(
        r"message (\d+) \(user\), characters (\d+)-(\d+) of (\d+); "
        r'whole message: recall\("message \1", offset=(\d+)\)',
        header,
    )
    assert found is not None, header
    seq, lo, hi, total, offset = (int(g) for g in found.groups())
    assert (lo, hi) == (total - len(NEEDLE) - WINDOW, total)
    # The offset given reads the whole message from the window's first character on.
    whole = c.recall(f"message {seq}", offset=offset, limit=200)
    window = page.text.split("\n", 1)[1]
    assert window.startswith(whole.text[:200])
    # And "message N" itself still pages from character 0, its header first.
    first = c.recall(f"message {seq}")
    assert first.text.startswith("=== message") and "test_case_00000" in first.text
    assert first.next_offset is not None


def test_a_recall_header_still_carries_a_boundary_token_no_content_holds() -> None:
    page = compactor().recall("TaxMismatch")
    header = page.text.splitlines()[0]
    token = re.search(r" · ([0-9a-f]{12,}) ===$", header)
    assert token is not None, header
    assert token.group(1) not in LONG


def test_many_matches_in_one_message_show_the_first_windows_and_count_the_rest() -> None:
    spaced = ("x" * 2_000 + "\nNEEDLE here\n") * (WINDOWS + 2)
    c = Compactor(Policy.default(context_limit=50_000), MemoryStore())
    c.prepare([{"role": "user", "content": spaced}], "go")
    page = c.recall("needle")
    assert page.text.count("NEEDLE here") == WINDOWS
    assert '2 more match(es) in message 0: recall("message 0")' in page.text


def test_a_short_message_comes_back_whole_as_before() -> None:
    c = Compactor(Policy.default(context_limit=50_000), MemoryStore())
    c.prepare([{"role": "user", "content": "find the NEEDLE in here"}], "go")
    lines = c.recall("needle").text.splitlines()
    assert re.fullmatch(r"=== message 0 \(user\) · [0-9a-f]{12,} ===", lines[0])
    assert lines[1:] == ["find the NEEDLE in here"]


def test_the_cli_recall_shows_the_needle_at_the_end_of_a_31kb_result(tmp_path: Path) -> None:
    store = workdir_store(tmp_path)
    try:
        sid = compactor(store).session_id
    finally:
        store.close()
    assert sid is not None
    for limit in ("8000", "1200"):
        out = CliRunner().invoke(
            main, ["recall", sid, "TaxMismatch", "--limit", limit, "--workdir", str(tmp_path)]
        )
        assert out.exit_code == 0, out.output
        assert NEEDLE in out.output


def test_the_agents_recall_tool_shows_the_needle_at_the_end_of_a_31kb_result(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "out.txt").write_text(LONG, encoding="utf-8")
    provider = ScriptedProvider(
        [
            tool_call("bash", {"command": "cat out.txt"}),
            tool_call("recall", {"query": "TaxMismatch"}),
            "done",
        ]
    )
    store = workdir_store(work)
    try:
        agent = Agent(provider, Compactor(Policy.default(), store), Workspace(work))
        result = agent.run([], "look").history
    finally:
        store.close()
    recalled = result[-2]["content"][0]["content"]
    assert NEEDLE in recalled, recalled[:300]
    assert len(recalled) < PAGE
