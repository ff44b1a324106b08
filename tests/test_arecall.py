"""``arecall``: the async twin of ``recall``, the same page."""

from __future__ import annotations

import asyncio

from context_compact import Compactor, MemoryStore, Policy


def test_arecall_gives_the_page_recall_gives() -> None:
    cc = Compactor(Policy.default(context_limit=200_000), MemoryStore())
    cc.prepare([{"role": "user", "content": "remember the word pelican-42"}], "remember")
    page = asyncio.run(cc.arecall("pelican-42"))
    assert page == cc.recall("pelican-42")
    assert page.hits >= 1 and "pelican-42" in page.text
