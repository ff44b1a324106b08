"""A clearing reuses the counts of results made as they arrived: those counts are the
counter's counts of the very texts, and positions a summary took out are forgotten."""

from __future__ import annotations

from context_compact import Compactor, MemoryStore, Policy
from context_compact.bench.fakes import BenchSummarizer
from context_compact.bench.workload import synthetic_session


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
    state = compactor.engine.state
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
