"""After a summary the view keeps what it showed from the cut on (``Shown.reprefix``): every
message, key, count and content JSON is what rendering and counting the log afresh gives."""

from __future__ import annotations

from typing import Any

import pytest

from context_compact import Compactor, MemoryStore, Policy
from context_compact.keys import content_key
from context_compact.session.shown import Shown
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session


def _afresh(state: Any) -> Shown:
    fresh = Shown(state.counter)
    fresh.refill(
        [*state.pinned.prefix, *(state.render(s) for s in range(state.first_kept, state.n))]
    )
    return fresh


@pytest.mark.parametrize(("window", "turns"), [(4_096, 150), (12_500, 300), (30_000, 400)])
def test_the_view_after_each_summary_is_the_log_rendered_and_counted_afresh(
    window: int, turns: int
) -> None:
    workload = synthetic_session(turns, seed=21)
    compactor = Compactor(Policy.default(context_limit=window), MemoryStore(), BenchSummarizer())
    messages: list[Any] = [{"role": "user", "content": workload.request}]
    summaries = 0
    for turn in workload.turns:
        messages = compactor.prepare(messages, workload.request)
        state = compactor.engine.session.state
        if state.pinned.summaries > summaries:
            summaries = state.pinned.summaries
            shown, fresh = state.shown, _afresh(state)
            assert shown.messages == fresh.messages
            assert shown.keys == [content_key(m) for m in shown.messages] == fresh.keys
            assert shown.tokens == fresh.tokens and shown.total == fresh.total
            assert shown.texts == fresh.texts and shown.use_ids == fresh.use_ids
        messages += [turn.assistant, turn.results]
    assert summaries >= 3
