"""Stage laws, for any valid history: valid stays valid, the input is untouched, the view fits.

Run against the seed preset (the default preset's laws live in test_default_properties.py).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_compact import Compactor, MemoryStore, Policy, check, estimate_chars, summary_message
from context_compact.seed.summary import reactive_cut
from histories import histories

SUMMARY = "summary of the dropped part"


class Recorder:
    def __init__(self) -> None:
        self.seen: list[list[dict[str, Any]]] = []

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        self.seen.append(messages)
        return SUMMARY


def seed_compactor() -> tuple[Compactor, MemoryStore, Recorder]:
    store, summarizer = MemoryStore(), Recorder()
    return Compactor(Policy.seed(), store, summarizer), store, summarizer


@pytest.mark.slow
@given(histories())
def test_generated_histories_are_valid(messages: list[dict[str, Any]]) -> None:
    assert check(messages) == []


@pytest.mark.slow
@given(histories(), st.sampled_from(["tool_result_budget", "snip_compact", "micro_compact"]))
def test_every_stage_keeps_a_valid_history_valid_and_leaves_the_input_alone(
    messages: list[dict[str, Any]], stage: str
) -> None:
    compactor, _, _ = seed_compactor()
    frozen = copy.deepcopy(messages)
    out = getattr(compactor.engine, stage)(messages)
    assert check(out) == []
    assert messages == frozen


@pytest.mark.slow
@given(histories(), st.sampled_from(["tool_result_budget", "snip_compact", "micro_compact"]))
def test_no_stage_grows_the_history(messages: list[dict[str, Any]], stage: str) -> None:
    compactor, _, _ = seed_compactor()
    out = getattr(compactor.engine, stage)(messages)
    assert len(out) <= len(messages)
    if stage != "snip_compact":  # the marker can outweigh a short middle
        assert estimate_chars(out) <= estimate_chars(messages)


@pytest.mark.slow
@given(histories())
def test_prepare_keeps_valid_unchanged_input_and_fits_when_the_summary_fits(
    messages: list[dict[str, Any]],
) -> None:
    compactor, store, _ = seed_compactor()
    frozen = copy.deepcopy(messages)
    out = compactor.prepare(messages, "the request")
    assert check(out) == []
    assert messages == frozen
    summary_size = estimate_chars(
        [
            summary_message(
                "Compacted",
                "the request",
                SUMMARY,
                f"{store.root}/.transcripts/transcript_{0:032x}.jsonl",
            )
        ]
    )
    if summary_size <= compactor.policy.context_limit:
        assert estimate_chars(out) <= compactor.policy.context_limit


@pytest.mark.slow
@given(histories())
def test_prepare_is_stable_on_its_own_output_below_the_snip_limit(
    messages: list[dict[str, Any]],
) -> None:
    compactor, _, _ = seed_compactor()
    once = compactor.prepare(messages, "r")
    if len(once) <= compactor.policy.snip_max_messages:
        assert compactor.prepare(once, "r") == once


@pytest.mark.slow
@given(histories())
def test_reactive_compact_keeps_the_tail_verbatim_and_summarizes_only_the_prefix(
    messages: list[dict[str, Any]],
) -> None:
    compactor, _, summarizer = seed_compactor()
    frozen = copy.deepcopy(messages)
    out = compactor.reactive_compact(messages, "r")
    assert check(out) == []
    assert messages == frozen
    cut = reactive_cut(messages, 5)
    if len(messages) > 5:
        assert cut > 0
    if cut > 0:
        assert out[1:] == messages[cut:]
        assert len(out) - 1 >= 5
        assert summarizer.seen == [messages[:cut]]
    else:
        assert len(out) == 1 and summarizer.seen == [messages]
