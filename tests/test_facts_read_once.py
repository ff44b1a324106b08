"""Reading each message once (``facts.Readings``): the summary pass's summarizer and its
score read the same messages; given one ``Readings`` a message is read once, and what
``facts`` finds is the same as reading afresh. The summarizer runs in a copy of the caller's
context."""

from __future__ import annotations

import contextvars
from collections import Counter
from dataclasses import asdict
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_compact import Compactor, MemoryStore, Policy
from context_compact.summary import facts as facts_module
from context_compact.summary.extract import extractive_summary
from context_compact.summary.facts import Readings, facts
from context_compact.testing.workload import synthetic_session

WORKLOAD = synthetic_session(120, seed=13)
HISTORY: list[Any] = [{"role": "user", "content": WORKLOAD.request}]
for _turn in WORKLOAD.turns:
    HISTORY += [_turn.assistant, _turn.results]


@given(
    st.integers(0, len(HISTORY) - 1),
    st.integers(1, 90),
    st.integers(0, 40),
    st.integers(1, 40),
)
def test_facts_read_once_are_the_facts_read_afresh(
    start: int, size: int, skip: int, keep: int
) -> None:
    span = HISTORY[start : start + size]
    part = span[skip : skip + keep]  # the score reads a part of what the summarizer read
    fresh_span, fresh_part = asdict(facts(span)), asdict(facts(part))
    readings = Readings()
    assert asdict(facts(span, readings)) == fresh_span
    assert asdict(facts(part, readings)) == fresh_part
    assert asdict(facts(span, readings)) == fresh_span


def test_a_message_edited_in_place_is_read_again_by_the_next_summary() -> None:
    message = {"role": "user", "content": "Fix the bug in src/old_name.py please."}
    assert "src/old_name.py" in facts([message], Readings()).files
    message["content"] = "Fix the bug in src/new_name.py please."
    assert list(facts([message]).files) == ["src/new_name.py"]
    assert list(facts([message], Readings()).files) == ["src/new_name.py"]


TRACE: contextvars.ContextVar[str] = contextvars.ContextVar("trace", default="none")


def test_the_summarizer_runs_in_the_callers_context() -> None:
    """A tracing span or a logging context set around ``prepare`` reaches the summarizer,
    which runs on a worker thread (with a timeout)."""
    seen: list[str] = []

    def summarizer(messages: list[Any]) -> str:
        seen.append(TRACE.get())
        return "Summary: the parser was fixed."

    compactor = Compactor(Policy.default(context_limit=6_000), MemoryStore(), summarizer)
    TRACE.set("request-42")
    compactor.prepare(HISTORY, WORKLOAD.request)
    assert seen and set(seen) == {"request-42"}


def test_a_summary_reads_each_message_once_for_its_summarizer_and_its_score(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read: list[object] = []  # every message read, held so that no id is reused
    real = facts_module._read

    def reading(message: Any) -> Any:
        read.append(message)
        return real(message)

    monkeypatch.setattr(facts_module, "_read", reading)
    compactor = Compactor(Policy.default(context_limit=6_000), MemoryStore(), extractive_summary)
    compactor.prepare(HISTORY, WORKLOAD.request)
    summaries = [e for e in compactor.events if e.stage == "summarize"]
    assert len(summaries) == 1 and summaries[0].score is not None
    counts = Counter(id(message) for message in read)
    assert len(counts) > 10 and set(counts.values()) == {1}
