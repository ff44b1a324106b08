"""How the default engine asks for summaries: one typed request, adapted once, one worker."""

from __future__ import annotations

import inspect
import threading
from typing import Any

from context_compact import Compactor, MemoryStore, Policy, check
from context_compact.summary.summarize import SummaryRequest
from histories import pair, user


def history(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [user("port the parser")]
    for i in range(turns):
        out += pair(f"t{i}", f"result {i} " + "x" * 300)
    return out


class Typed:
    """A summarizer of the typed protocol: no ``__call__``, one request object."""

    def __init__(self) -> None:
        self.asks: list[SummaryRequest] = []

    def summarize(self, ask: SummaryRequest) -> str:
        self.asks.append(ask)
        return f"summary {len(self.asks)}"


def test_a_typed_summarizer_gets_the_previous_summary_the_focus_and_the_budget() -> None:
    summarizer = Typed()
    c = Compactor(Policy.default(context_limit=4_000), MemoryStore(), summarizer)
    c.compact_history(history(4), "port the parser")
    view = c.compact_history(history(8), "port the parser", instructions="the tokenizer")
    assert check(view) == []
    first, second = summarizer.asks
    assert first.previous is None and second.previous == "summary 1"
    assert second.focus == "the tokenizer" and first.focus is None
    assert second.budget is not None and 0 < second.budget <= 4_000
    # The request object holds messages, never the notes a plain callable would get.
    assert all(isinstance(m, dict) and "role" in m for m in second.messages)
    assert "summary 2" in str(view[1]["content"])


class Counted:
    """A callable summarizer that counts how often its signature is read."""

    def __init__(self) -> None:
        self.signature_reads = 0
        # The thread objects themselves: an ident may be reused by the next thread.
        self.threads: set[threading.Thread] = set()
        self.calls = 0

    @property
    def __signature__(self) -> inspect.Signature:
        self.signature_reads += 1
        return inspect.Signature([inspect.Parameter("messages", inspect.Parameter.POSITIONAL_ONLY)])

    def __call__(self, messages: list[Any]) -> str:
        self.calls += 1
        self.threads.add(threading.current_thread())
        return f"summary {self.calls}"


def test_a_callable_summarizer_is_adapted_once_and_runs_on_one_reused_worker() -> None:
    summarizer = Counted()
    c = Compactor(Policy.default(context_limit=3_000), MemoryStore(), summarizer)
    messages: list[Any] = [user("port the parser")]
    for i in range(60):
        messages = c.prepare(messages, "port the parser")
        messages += pair(f"t{i}", f"result {i} " + "y" * 800)
    assert summarizer.calls >= 3, "the session should have summarized several times"
    assert summarizer.signature_reads == 1
    assert len(summarizer.threads) == 1
    assert threading.current_thread() not in summarizer.threads


def test_after_a_timeout_the_next_summary_gets_a_fresh_worker() -> None:
    release = threading.Event()
    seen: list[threading.Thread] = []

    def slow_then_quick(messages: list[Any]) -> str:
        seen.append(threading.current_thread())
        if len(seen) == 1:
            release.wait(5)
            return "late"
        return "quick"

    c = Compactor(
        Policy.default(context_limit=4_000, summary_timeout=0.05), MemoryStore(), slow_then_quick
    )
    first = c.compact_history(history(4), "port the parser")
    assert "late" not in str(first[1]["content"])
    second = c.compact_history(history(8), "port the parser")
    release.set()
    assert "quick" in str(second[1]["content"])
    assert len(seen) == 2 and seen[0] is not seen[1]
