"""The inspector page, driven in headless Chromium: served, and as one offline file."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from inspector_sessions import NEEDLE, serving, tool_loop

from context_compact import MemoryStore
from context_compact.cli.compact import replay_policy
from context_compact.inspector import Inspection, Inspector, write_report
from context_compact.session.recall import message_text, recover

POINT = """(k) => {
  const line = document.querySelector('#chart polyline.tokens');
  const p = line.points.getItem(k - 1), m = line.getScreenCTM();
  return [p.x * m.a + m.e, p.y * m.d + m.f];
}"""


def opened(page: Any, url: str) -> Any:
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    return page


def showing(page: Any, k: int) -> None:
    """Wait until the view shown is request ``k``'s."""
    page.wait_for_function(
        "(k) => document.querySelector('#view-title').textContent.startsWith('Request ' + k + ' ')",
        arg=f"{k:,}",
    )


def click_request(page: Any, k: int) -> None:
    x, y = page.evaluate(POINT, k)
    # The mouse moves in whole pixels: the one nearest the point is inside its request.
    page.mouse.click(round(x), round(y))
    showing(page, k)


def test_the_chart_has_one_point_per_request(page: Any, long_url: str) -> None:
    opened(page, long_url)
    points = page.evaluate("document.querySelector('#chart polyline.tokens').points.numberOfItems")
    assert points == 620
    assert page.locator("#chart .event-mark").count() > 0
    assert page.locator("#chart .break-mark").count() > 0


def test_clicking_a_request_shows_that_requests_view(
    page: Any, long_url: str, long_inspection: Inspection
) -> None:
    found = long_inspection
    opened(page, long_url)
    for k in (100, 401):
        click_request(page, k)
        shown = page.inner_text("#view")
        last = message_text(found.view(k)[-1]).splitlines()[-1]
        assert last in shown
        assert f"{len(found.view(k))}. " in shown
        assert page.inner_text("#view-facts").startswith(f"{found.request(k).tokens:,} tokens")


def test_following_a_marker_opens_the_archived_text(
    page: Any, long_url: str, long_session: tuple[MemoryStore, str]
) -> None:
    store, sid = long_session
    opened(page, long_url)
    for selector in ("#view .block.marker a.archive-link", "#events a.archive-link"):
        link = page.locator(selector).first
        path = link.get_attribute("data-path")
        link.click()
        page.wait_for_function(
            "document.querySelector('#archive-text').textContent !== 'loading...'"
        )
        assert page.is_visible("#archive-box")
        # A cleared result's marker names its lines of a shared file: the box says which,
        # shows the whole file and marks them.
        shown = page.inner_text("#archive-path")
        assert shown == path or re.fullmatch(re.escape(path) + r" lines \d+-\d+", shown), shown
        assert page.text_content("#archive-text") == recover(store, sid, path)


def test_search_finds_a_string_that_left_the_view_500_requests_ago(
    page: Any, long_url: str, long_inspection: Inspection
) -> None:
    found = long_inspection
    carried = [r.index for r in found.requests if NEEDLE in str(found.view(r.index))]
    assert carried[-1] < 620 - 500
    opened(page, long_url)
    assert NEEDLE not in page.inner_text("#view")
    page.fill("#search-q", NEEDLE)
    page.press("#search-q", "Enter")
    page.wait_for_selector("#search-hits button")
    assert NEEDLE in page.inner_text("#search-text")
    assert page.inner_text("#search-facts").startswith("1 match(es)")
    page.click("#search-hits button")
    showing(page, carried[0])
    assert NEEDLE in page.inner_text("#view")


def test_the_events_table_shows_every_event_a_page_at_a_time_and_a_row_opens_its_request(
    page: Any, long_url: str, long_inspection: Inspection
) -> None:
    found = long_inspection
    opened(page, long_url)
    assert page.locator("#events tr.event-row").count() == 200 < len(found.events)
    rows = "document.querySelectorAll('#events tr.event-row').length"
    while page.locator("#events button:has-text('more events')").count():
        before = page.evaluate(rows)
        page.click("#events button:has-text('more events')")
        # The next page's rows and its button (or none, after the last page) come in one
        # task: once the rows are there, the button is what the next loop must see. A fixed
        # pause raced a slow machine into clicking a button the last page had removed.
        page.wait_for_function(f"{rows} > {before}")
    assert page.locator("#events tr.event-row").count() == len(found.events)
    page.locator("#events tr.event-row td").nth(7 * 5 + 1).click()
    showing(page, found.events[5].turn)


@pytest.fixture
def two_sessions() -> Iterator[tuple[str, str, str]]:
    store = MemoryStore()
    short, other = tool_loop(store, 40), tool_loop(store, 12, limit=100_000)
    yield from ((url, short, other) for url in serving(Inspector(store, compare=replay_policy)))


def test_the_ui_lists_every_session_and_compares_two_policies(
    page: Any, two_sessions: tuple[str, str, str]
) -> None:
    url, short, other = two_sessions
    opened(page, url)
    options = page.eval_on_selector_all("#session-pick option", "os => os.map(o => o.value)")
    assert options == [other, short]
    assert page.evaluate("document.querySelector('#chart polyline').points.numberOfItems") == 12
    page.select_option("#session-pick", short)
    page.wait_for_function("document.querySelector('#facts').textContent.includes('40 requests')")
    page.select_option("#policy-b", "none")
    page.fill("#compare-limit", "4000")
    page.click("#compare-form button")
    page.wait_for_selector("#compare .policy svg polyline")
    headings = page.eval_on_selector_all("#compare h3", "hs => hs.map(h => h.textContent)")
    assert headings == ["default", "none"]
    counts = page.eval_on_selector_all(
        "#compare svg polyline", "ls => ls.map(l => l.points.numberOfItems)"
    )
    assert counts == [41, 41]


def test_the_html_file_opens_offline(browser: Any, tmp_path: Path) -> None:
    store = MemoryStore()
    sid = tool_loop(store, 60, limit=3_000)
    found = Inspection.load(store, sid)
    file = tmp_path / "report.html"
    write_report(store, sid, file, replay_policy)
    context = browser.new_context(offline=True)
    asked: list[str] = []
    context.on("request", lambda request: asked.append(request.url))
    page = context.new_page()
    try:
        opened(page, file.as_uri())
        points = page.evaluate("document.querySelector('#chart polyline').points.numberOfItems")
        assert points == len(found.requests) == 60
        click_request(page, 30)
        assert message_text(found.view(30)[-1]).splitlines()[-1] in page.inner_text("#view")
        link = page.locator("#events a.archive-link").first
        path = link.get_attribute("data-path")
        link.click()
        assert page.text_content("#archive-text") == recover(store, sid, path)
        page.fill("#search-q", NEEDLE)
        page.press("#search-q", "Enter")
        page.wait_for_selector("#search-hits button")
        assert NEEDLE in page.inner_text("#search-text")
        page.wait_for_selector("#compare .policy svg polyline")
    finally:
        context.close()
    assert asked == [file.as_uri()]


HOSTILE = 'fix <b>this</b></script><img src=x onerror="window.pwned=1"> please'


def test_markup_in_a_log_is_shown_as_text_served_and_in_the_file(
    browser: Any, page: Any, tmp_path: Path
) -> None:
    store = MemoryStore()
    sid = tool_loop(store, 5, request=HOSTILE)
    for url in serving(Inspector(store, sid)):
        opened(page, url)
        click_request(page, 1)
        assert HOSTILE in page.inner_text("#view")
        assert page.evaluate("window.pwned") is None
    file = tmp_path / "hostile.html"
    write_report(store, sid, file)
    opened(page, file.as_uri())
    click_request(page, 1)
    assert HOSTILE in page.inner_text("#view")
    assert page.locator("#view img, #view b").count() == 0
    assert page.evaluate("window.pwned") is None
