"""Fixtures of the inspector's tests: one long session, a browser, a running server.

The browser is Debian's ``chromium`` driven by Playwright (its own browser download is not
used). Without one the browser tests skip, saying so, unless ``CC_REQUIRE_BROWSER=1`` (CI):
then a missing browser fails them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from inspector_sessions import serving, tool_loop

from context_compact import MemoryStore
from context_compact.inspector import Inspection, Inspector

CHROMIUM = ("chromium", "chromium-browser", "google-chrome")


@pytest.fixture(scope="session")
def long_session() -> tuple[MemoryStore, str]:
    """620 requests at a 4,000-token limit: the needle leaves the view in the first 100."""
    store = MemoryStore()
    return store, tool_loop(store, 620)


@pytest.fixture(scope="session")
def long_inspection(long_session: tuple[MemoryStore, str]) -> Inspection:
    store, sid = long_session
    return Inspection.load(store, sid)


def _chromium() -> str | None:
    for name in CHROMIUM:
        found = shutil.which(name)
        if found:
            return found
    return None


# Per module: Playwright's sync API keeps an asyncio loop running in this thread while it is
# open, and other modules' tests call asyncio.run().
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    path = _chromium()
    required = os.environ.get("CC_REQUIRE_BROWSER") == "1"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if required:
            raise
        pytest.skip("the playwright package is not installed (pip install -e '.[dev]')")
    if path is None:
        if required:
            pytest.fail("CC_REQUIRE_BROWSER=1 but no chromium on PATH (apt-get install chromium)")
        pytest.skip("no chromium on PATH: apt-get install chromium to run the browser tests")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert errors == []


@pytest.fixture(scope="session")
def long_url(long_session: tuple[MemoryStore, str]) -> Iterator[str]:
    store, sid = long_session
    yield from serving(Inspector(store, sid))
