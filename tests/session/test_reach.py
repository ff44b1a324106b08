"""Everything that ever left the view is two reads away from it, and one recall away.

"Two reads": opening a file the current view names is one read; opening a file named in that
file is the second. Only paths the store issued count (``bench.reach``).
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_compact import Compactor, MemoryStore, Policy
from context_compact.messages import block_type, blocks, result_text
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.reach import reach
from context_compact.testing.workload import synthetic_session
from histories import user


def drive(turns: int, seed: int, limit: int) -> tuple[Compactor, list[Any], list[str]]:
    store = MemoryStore()
    c = Compactor(Policy.default(context_limit=limit), store, BenchSummarizer())
    w = synthetic_session(turns, seed=seed)
    messages: list[Any] = [user(w.request)]
    texts: list[str] = []
    for turn in w.turns:
        messages = c.prepare(messages, w.request)
        messages.append(turn.assistant)
        messages.append(turn.results)
        texts += [result_text(b) for b in blocks(turn.results) if block_type(b) == "tool_result"]
    return c, c.prepare(messages, w.request), texts


# Sessions up to 1,200 turns in the default run (each example drives every turn; the longest
# took most of a minute), up to 2,000 under the thorough and slow hypothesis profiles.
LONGEST = 2_000 if os.environ.get("HYPOTHESIS_PROFILE") in ("thorough", "slow") else 1_200


@settings(max_examples=4)
@given(
    turns=st.integers(50, LONGEST),
    seed=st.integers(0, 10_000),
    limit=st.sampled_from([4_000, 12_500, 30_000]),
)
def test_every_result_of_a_long_session_is_within_two_reads_of_the_view_and_one_recall(
    turns: int, seed: int, limit: int
) -> None:
    c, view, texts = drive(turns, seed, limit)
    store = c.store
    assert isinstance(store, MemoryStore)
    found = reach(view, store, store.root, texts, max_reads=2)
    assert found.lost == 0, found.lost_items[:3]
    shown = str(view)
    gone = [t for t in texts if t[:100] not in shown]
    for text in gone[:: max(1, len(gone) // 5)]:
        assert text in c.recall(text[:80], limit=10**9).text


def test_a_thousand_turns_compact_many_times_and_lose_nothing_within_two_reads() -> None:
    c, view, texts = drive(1_000, 11, 12_500)
    summaries = [e for e in c.events if e.stage == "summarize"]
    assert len(summaries) >= 20
    store = c.store
    assert isinstance(store, MemoryStore)
    assert reach(view, store, store.root, texts, max_reads=2).lost == 0
    # ... and one read is not enough for all of them: the index is what makes two suffice.
    assert reach(view, store, store.root, texts, max_reads=1).lost > 0


def test_recall_finds_the_original_of_results_that_left_the_view() -> None:
    c, view, texts = drive(300, 5, 4_000)
    shown = str(view)
    gone = [t for t in texts if t[:200] not in shown]
    assert len(gone) > 100
    for text in gone[::25]:
        needle = text[:60]
        page = c.recall(needle, limit=10**8)
        assert text in page.text


def test_recall_pages_long_answers_and_says_where_to_continue() -> None:
    c, _, texts = drive(120, 5, 4_000)
    big = max(texts, key=len)
    # A page too small for the whole message: the windows round the match, paged.
    first = c.recall(big[:50], limit=300)
    assert len(first.text) == 300 and first.next_offset == 300
    assert "more from offset=300" in str(first)
    second = c.recall(big[:50], offset=300, limit=300)
    assert second.text == (first.text + second.text)[300:]
    assert big[:50] in first.text + second.text


def test_recall_by_position_returns_that_message() -> None:
    c, _, _ = drive(30, 2, 4_000)
    page = c.recall("message 0")
    assert page.hits == 1 and synthetic_session(30, seed=2).request in page.text
    assert c.recall("nothing like this appears anywhere").hits == 0
