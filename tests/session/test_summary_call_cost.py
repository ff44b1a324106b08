"""A summary's event carries its model call's usage, and ``inspect`` says it."""

from __future__ import annotations

from typing import Any

from context_compact import Compactor, MemoryStore, Policy
from context_compact.history.inspect import timeline, timing_line
from context_compact.providers.base import ModelReply, Usage
from context_compact.summary import LLMSummarizer, SummaryRequest, SummaryResult
from context_compact.testing.model import text_reply
from context_compact.testing.workload import synthetic_session

USAGE = Usage(input_tokens=900, output_tokens=120, cache_read_tokens=4_000)


class Billed:
    """A provider whose every reply reports ``USAGE``."""

    name, model = "billed", "billed"

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, **_: Any) -> ModelReply:
        self.calls += 1
        return ModelReply(text_reply("## Next step\nthe summary"), usage=USAGE)


def play(summarizer: Any) -> tuple[MemoryStore, Compactor]:
    store = MemoryStore("/memory")
    compactor = Compactor(Policy.default(context_limit=12_500), store, summarizer, session="s")
    workload = synthetic_session(60, seed=3)
    messages: list[Any] = [{"role": "user", "content": workload.request}]
    for turn in workload.turns:
        view = compactor.prepare(messages, workload.request)
        messages = [*view, turn.assistant, turn.results]
    return store, compactor


def test_a_model_summarys_event_carries_the_tokens_its_call_read_and_wrote() -> None:
    provider = Billed()
    store, compactor = play(LLMSummarizer(provider))
    summaries = [e for e in compactor.events if e.stage == "summarize"]
    assert provider.calls and summaries
    for event in summaries:
        assert event.timing is not None and event.before > event.after
        assert event.timing["input_tokens"] == USAGE.prompt_tokens == 4_900
        assert event.timing["cached_tokens"] == 4_000
        assert event.timing["output_tokens"] == 120
    shown = [e for e in timeline(store, "s").events if e.stage == "summarize"]
    assert shown and all(
        "its call read 4,900 tokens (4,000 from the cache) and wrote 120"
        in str(timing_line(e.timing))
        for e in shown
    )


def test_a_summary_without_a_reported_call_says_nothing_of_its_cost() -> None:
    def plain(messages: list[Any]) -> str:
        return "## Next step\nthe summary"

    _, compactor = play(plain)
    summaries = [e for e in compactor.events if e.stage == "summarize"]
    assert summaries and all(e.timing and "input_tokens" not in e.timing for e in summaries)
    assert all("its call" not in str(timing_line(dict(e.timing or {}))) for e in summaries)


def test_the_usage_a_summarizes_object_reports_lands_on_the_summarys_event() -> None:
    class Reporting:
        def summarize(self, ask: SummaryRequest) -> SummaryResult:
            usage = {"input_tokens": 700 + len(ask.messages), "cached_tokens": 0}
            return SummaryResult("## Next step\nthe summary", {**usage, "output_tokens": 9})

    _, compactor = play(Reporting())
    summaries = [e for e in compactor.events if e.stage == "summarize"]
    assert summaries
    for event in summaries:
        assert event.timing is not None and event.timing["output_tokens"] == 9
        assert event.timing["input_tokens"] > 700 and event.timing["cached_tokens"] == 0
