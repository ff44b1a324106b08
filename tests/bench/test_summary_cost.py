"""Summary requests priced as sent: the prefix they repeat from the previous request is read."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from context_compact import MemoryStore
from context_compact.summary import SummaryRequest
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.replay import Replay, replay
from context_compact.testing.summary_cost import ContinuingSummarizer, price_send
from context_compact.testing.workload import synthetic_session
from context_compact_bench.pricing import Pricing
from context_compact_bench.strategies import Setup, build

ROOT = "/bench"
BUDGET = 8_000

texts = st.lists(st.text(alphabet="abc", min_size=1, max_size=3), max_size=8)


def messages_of(words: list[str]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": w} for w in words]


def priced(input_tokens: int, cached: int) -> float:
    result = Replay("s", "w", summary_input_tokens=input_tokens, summary_cached_tokens=cached)
    return Pricing().cost(result)


@given(
    previous=texts,
    sent=texts,
    extra=st.integers(0, 50),
    overhead=st.integers(0, 500),
    first=st.booleans(),
)
def test_a_summary_priced_as_sent_never_costs_more_than_priced_plain(
    previous: list[str], sent: list[str], extra: int, overhead: int, first: bool
) -> None:
    prior = [] if first else messages_of(previous)
    send = (messages_of(sent), extra)
    sizes = [len(w) for w in sent]
    whole, cached = price_send(send, prior, [len(w) for w in previous], sizes, overhead)
    assert whole == overhead + sum(sizes) + extra
    assert 0 <= cached <= whole
    assert priced(whole, cached) <= priced(whole, 0)
    if first:  # nothing was sent before it: nothing is shared, the prices are equal
        assert cached == 0 and priced(whole, cached) == priced(whole, 0)


def test_only_the_prefix_both_requests_start_with_is_read_from_the_cache() -> None:
    previous = messages_of(["aa", "bbb", "c"])
    same_head = (messages_of(["aa", "bbb", "zz"]), 7)
    other_head = (messages_of(["zz", "bbb"]), 7)
    sizes = [2, 3, 1]
    assert price_send(same_head, previous, sizes, [2, 3, 2], 100) == (114, 105)
    assert price_send(other_head, previous, sizes, [2, 3], 100) == (112, 100)


def test_a_continuing_summarizer_records_its_request_as_sent_and_not_as_a_transcript() -> None:
    inner = BenchSummarizer()
    summarizer = ContinuingSummarizer(inner)
    view = messages_of(["first request", "an answer"])
    text = summarizer.summarize(SummaryRequest(view[:1], sent=view, budget=500))
    assert text and inner.calls == 1 and inner.input_tokens == 0
    [(messages, instruction)] = inner.sends
    assert messages == view and instruction > 0
    summarizer.summarize(SummaryRequest(view[:1]))  # no view given: the transcript call
    assert inner.calls == 2 and inner.input_tokens > 0 and len(inner.sends) == 1


def run(name: str) -> Replay:
    store, summarizer = MemoryStore(ROOT), BenchSummarizer()
    compactor = build(name, Setup(BUDGET, store, summarizer, 2_000))
    workload = synthetic_session(120, seed=2)
    return replay(
        compactor,
        workload,
        store=store,
        root=ROOT,
        overhead_tokens=2_000,
        window=BUDGET,
        summarizer=summarizer,
    )


def test_summaries_that_continue_the_agents_request_read_part_of_it_from_the_cache() -> None:
    for name in ("default-continued", "default-native", "anthropic-compaction"):
        result = run(name)
        assert result.summary_calls > 0
        assert 0 < result.summary_cached_tokens < result.summary_input_tokens, name
        plain = Replay(**{**vars(result), "summary_cached_tokens": 0})
        assert Pricing().cost(result) < Pricing().cost(plain)


def test_summaries_made_from_a_transcript_share_nothing_with_the_agents_requests() -> None:
    result = run("default")
    assert result.summary_calls > 0 and result.summary_cached_tokens == 0
