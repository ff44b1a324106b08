"""The inspector's search shows the match: a needle at the end of a 31 KB result is on the
first page, marked, and scrolled into sight; served and in the written file alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspector_sessions import serving

from context_compact import Compactor, MemoryStore, Policy
from context_compact.inspector import Inspector, write_report

NEEDLE = "TaxMismatch: expected 1.19 got 1.2"
LONG = "".join(f"test_case_{i:05d} PASSED in 0.01s\n" for i in range(1_000)) + NEEDLE


def session(store: MemoryStore) -> str:
    c = Compactor(Policy.default(context_limit=50_000), store)
    use = {"type": "tool_use", "id": "t1", "name": "bash", "input": {"c": "pytest"}}
    c.prepare(
        [
            {"role": "user", "content": "run the tests"},
            {"role": "assistant", "content": [use]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": LONG}],
            },
            {"role": "assistant", "content": "one failure"},
        ],
        "run the tests",
    )
    assert c.session_id is not None
    return c.session_id


def searched(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    page.fill("#search-q", "TaxMismatch")
    page.press("#search-q", "Enter")
    page.wait_for_selector("#search-text mark")
    assert NEEDLE in page.inner_text("#search-text")
    assert page.inner_text("#search-facts").startswith("1 match(es)")
    assert "more" not in page.inner_text("#search-hits")  # the first page holds it
    assert page.locator("#search-text mark").first.inner_text() == "TaxMismatch"
    # Scrolled to: the mark is inside the visible part of the search box.
    inside = page.evaluate(
        """() => { const box = document.getElementById('search-text').getBoundingClientRect();
                   const m = document.querySelector('#search-text mark').getBoundingClientRect();
                   return m.top >= box.top && m.bottom <= box.bottom; }"""
    )
    assert inside


def test_the_served_search_marks_a_needle_at_the_end_of_a_31kb_result(page: Any) -> None:
    store = MemoryStore()
    sid = session(store)
    for url in serving(Inspector(store, sid)):
        searched(page, url)


def test_the_written_files_search_marks_a_needle_at_the_end_of_a_31kb_result(
    page: Any, tmp_path: Path
) -> None:
    store = MemoryStore()
    sid = session(store)
    file = tmp_path / "report.html"
    write_report(store, sid, file)
    searched(page, file.as_uri())
