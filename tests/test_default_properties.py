"""Laws of the default policy for any valid history, fed in one go or message by message."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from context_compact import Compactor, MemoryStore, Policy, check
from context_compact.sizing import TokenCounter
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.reach import reach
from histories import histories


def results_of(messages: list[dict[str, Any]]) -> list[str]:
    return [
        b["content"]
        for m in messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]


COUNTER = TokenCounter()


def make(limit: int) -> tuple[Compactor, MemoryStore]:
    store = MemoryStore()
    return Compactor(Policy.default(context_limit=limit), store, BenchSummarizer()), store


@given(histories(max_turns=40), st.sampled_from([3_000, 12_500, 60_000]))
def test_prepare_in_one_go_is_valid_leaves_input_alone_and_loses_nothing(
    messages: list[dict[str, Any]], limit: int
) -> None:
    c, store = make(limit)
    frozen = copy.deepcopy(messages)
    view = c.prepare(messages, "r")
    assert check(view) == []
    assert messages == frozen
    assert reach(view, store, store.root, results_of(messages)).lost == 0


@given(histories(max_turns=40), st.sampled_from([3_000, 12_500]))
def test_growing_a_history_turn_by_turn_stays_valid_and_loses_nothing(
    messages: list[dict[str, Any]], limit: int
) -> None:
    c, store = make(limit)
    view: list[dict[str, Any]] = []
    fed = 0
    # Feed the history one assistant turn at a time, as an agent loop would.
    cuts = [i for i, m in enumerate(messages) if m["role"] == "assistant"] + [len(messages)]
    for cut in cuts:
        view = c.prepare([*view, *messages[fed:cut]], "r")
        fed = cut
        assert check(view) == []
    assert reach(view, store, store.root, results_of(messages)).lost == 0


@given(histories(max_turns=30))
def test_reactive_and_manual_compaction_keep_the_newest_turn(
    messages: list[dict[str, Any]],
) -> None:
    c, _ = make(3_000)
    view = c.prepare(messages, "r")
    for method in (c.reactive_compact, c.compact_history):
        after = method(view, "r")
        assert check(after) == []
        last_assistant = max(
            (i for i, m in enumerate(view) if m["role"] == "assistant"), default=None
        )
        # The newest turn stays verbatim unless it alone takes most of the limit as the
        # compactor now counts it (a refusal raises its calibration): then a cut before a
        # user request, or a summary that closes the turn, may take it (its copy is kept).
        newest = view[last_assistant:] if last_assistant is not None else []
        size = sum(map(COUNTER.count, newest)) * c.engine.session.state.ratio  # type: ignore[attr-defined]
        if newest and size <= 3_000 / 2:
            assert after[-len(newest) :] == newest
        view = after
