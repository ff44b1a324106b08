"""The native tiers' rows: the providers' compaction modelled from their docs, beside ours."""

from __future__ import annotations

from typing import Any

from context_compact import MemoryStore
from context_compact.messages import compaction_at
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.replay import replay
from context_compact.testing.workload import synthetic_session
from context_compact_bench.strategies import Setup, build
from context_compact_bench.strategies.native import ModelledCompaction, trigger_for

ROOT = "/bench"
BUDGET = 8_000


def run(name: str) -> tuple[Any, Any]:
    store, summarizer = MemoryStore(ROOT), BenchSummarizer()
    compactor = build(name, Setup(BUDGET, store, summarizer))
    workload = synthetic_session(120, seed=2)
    result = replay(
        compactor, workload, store=store, root=ROOT, window=BUDGET, summarizer=summarizer
    )
    return result, compactor


def test_our_native_tier_loses_nothing_and_its_views_open_with_the_providers_block() -> None:
    result, compactor = run("default-native")
    assert result.summary_calls > 0 and result.lost == 0 and result.over_budget_calls == 0
    view = compactor.view()
    assert compaction_at(view[0]) == 0
    assert compactor.engine.session.native.blocks == result.summary_calls


def test_the_providers_threshold_compaction_drops_what_came_before_the_block() -> None:
    anthropic, _ = run("anthropic-compaction")
    openai, _ = run("openai-compaction")
    for result in (anthropic, openai):
        assert result.summary_calls > 0 and result.lost > 0
    # OpenAI's compacted window keeps the user's messages; Anthropic's keeps the block alone.
    assert openai.user_kept == openai.user_messages > anthropic.user_kept == 0


def test_a_modelled_compaction_prices_its_input_as_sent() -> None:
    summarizer = BenchSummarizer(input_limit=1_000)
    compaction = ModelledCompaction(summarizer)
    messages = [{"role": "user", "content": "x " * 20_000}]
    block = compaction(messages)
    assert block["type"] == "compaction" and block["content"]
    # The request as sent, whatever the summarizer was shown: the replay prices it.
    assert summarizer.sends == [(messages, 0)] and summarizer.input_tokens == 0
    assert trigger_for(12_500) == 9_375 and trigger_for(400_000) == 150_000
