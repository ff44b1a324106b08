"""What a clearing reads is kept as messages arrive: the counts of results (the counter's
counts of the very texts, forgotten when a summary takes them out) and where the results and
the assistant messages are (the same as a scan of the view finds)."""

from __future__ import annotations

from typing import Any

import pytest

from context_compact import Compactor, MemoryStore, Policy
from context_compact.messages import block_type, blocks
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session


def _drive(turns: int, window: int) -> Compactor:
    workload = synthetic_session(turns, seed=3)
    compactor = Compactor(Policy.default(context_limit=window), MemoryStore(), BenchSummarizer())
    messages = [{"role": "user", "content": workload.request}]
    for turn in workload.turns:
        messages = compactor.prepare(messages, workload.request)
        messages += [turn.assistant, turn.results]
    return compactor


def test_every_kept_result_size_is_the_count_of_its_text_and_of_a_message_in_view() -> None:
    compactor = _drive(400, 20_000)
    state = compactor.engine.session.state
    kinds = {e.stage for e in compactor.events}
    assert {"clear_old_results", "summarize"} <= kinds  # both passes ran on the way
    assert state.result_sizes
    for (seq, _block), (text, tokens) in state.result_sizes.items():
        assert seq >= state.first_kept or seq in state.pinned.pins
        assert tokens == state.counter.text(text)


def test_a_resumed_session_clears_as_an_unbroken_one_without_the_counts_made_on_arrival() -> None:
    workload = synthetic_session(300, seed=5)
    policy = Policy.default(context_limit=15_000)
    unbroken = Compactor(policy, MemoryStore(), BenchSummarizer(), session="s")
    store = MemoryStore()
    first = Compactor(policy, store, BenchSummarizer(), session="s")
    ours = theirs = [{"role": "user", "content": workload.request}]
    for turn in workload.turns[:200]:
        ours = unbroken.prepare(ours, workload.request) + [turn.assistant, turn.results]
        theirs = first.prepare(theirs, workload.request) + [turn.assistant, turn.results]
    resumed = Compactor(policy, store, BenchSummarizer(), session="s")
    del first
    for turn in workload.turns[200:]:
        ours = unbroken.prepare(ours, workload.request)
        theirs = resumed.prepare(theirs, workload.request)
        assert theirs == ours
        ours = [*ours, turn.assistant, turn.results]
        theirs = [*theirs, turn.assistant, turn.results]
    assert sum(e.stage == "clear_old_results" for e in resumed.events) >= 2


def _scanned(state: Any) -> tuple[list[Any], list[int], int]:
    """The positions as a scan of the view's log finds them (what the index must equal)."""
    seqs = range(state.first_kept, state.n)
    results = [
        ((seq, bi), block)
        for seq in seqs
        if state.msgs[seq].get("role") == "user"
        for bi, block in enumerate(blocks(state.msgs[seq]))
        if block_type(block) == "tool_result"
    ]
    starts = [seq for seq in seqs if state.msgs[seq].get("role") == "assistant"]
    return results, starts, starts[-1] if starts else state.first_kept - 1


@pytest.mark.parametrize("window", [4_096, 12_500, 30_000])
def test_the_positions_kept_as_messages_arrive_are_those_a_scan_of_the_view_finds(
    window: int,
) -> None:
    workload = synthetic_session(160, seed=window % 7)
    compactor = Compactor(Policy.default(context_limit=window), MemoryStore(), BenchSummarizer())
    messages = [{"role": "user", "content": workload.request}]
    for i, turn in enumerate(workload.turns):
        if i == 120:  # a new conversation: the log goes on, the view starts again
            messages = [{"role": "user", "content": "Now something else entirely."}]
        messages = compactor.prepare(messages, workload.request)
        state = compactor.engine.session.state
        results, starts, last = _scanned(state)
        assert state.results(state.first_kept, state.n) == results
        assert state.turn_starts() == starts
        assert state.last_assistant() == last
        assert state.results(last + 1, state.n) == [r for r in results if r[0][0] > last]
        messages += [turn.assistant, turn.results]
    assert any(e.stage == "summarize" for e in compactor.events)
    assert any(e.stage == "session_restart" for e in compactor.events)
