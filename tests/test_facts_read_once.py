"""Reading each message once (``extract.read_once``): the summary pass's summarizer and its
score read the same messages; within the block a message is read once, and what ``facts``
finds is the same as reading afresh. The summarizer runs in a copy of the caller's context."""

from __future__ import annotations

import contextvars
from dataclasses import asdict
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from context_compact import Compactor, MemoryStore, Policy
from context_compact.summary.facts import facts, read_once
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
    with read_once():
        assert asdict(facts(span)) == fresh_span
        assert asdict(facts(part)) == fresh_part
        assert asdict(facts(span)) == fresh_span


def test_a_message_edited_in_place_after_the_block_is_read_again() -> None:
    message = {"role": "user", "content": "Fix the bug in src/old_name.py please."}
    with read_once():
        assert "src/old_name.py" in facts([message]).files
    message["content"] = "Fix the bug in src/new_name.py please."
    assert list(facts([message]).files) == ["src/new_name.py"]


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
