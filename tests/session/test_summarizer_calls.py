"""How the engines ask for summaries: one typed request, a callable adapted once at the
Compactor, one worker."""

from __future__ import annotations

import inspect
import threading
from typing import Any

import pytest

from context_compact import Compactor, ConfigError, MemoryStore, Policy, check
from context_compact.summary import SummaryRequest, SummaryResult
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


def test_a_callable_summarizers_signature_is_never_read_and_it_runs_on_one_reused_worker() -> None:
    summarizer = Counted()
    c = Compactor(Policy.default(context_limit=3_000), MemoryStore(), summarizer)
    messages: list[Any] = [user("port the parser")]
    for i in range(60):
        messages = c.prepare(messages, "port the parser")
        messages += pair(f"t{i}", f"result {i} " + "y" * 800)
    assert summarizer.calls >= 3, "the session should have summarized several times"
    assert summarizer.signature_reads == 0
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


def loop(summarizer: Any, policy: Policy) -> tuple[Compactor, list[Any]]:
    """A tool loop through ``prepare`` until the view holds a summary message."""
    c = Compactor(policy, MemoryStore(), summarizer)
    messages: list[Any] = [user("port the parser")]
    for i in range(80):
        messages = c.prepare(messages, "port the parser")
        assert check(messages) == []
        if any("summary of" in str(m["content"]) for m in messages):
            return c, messages
        messages += pair(f"t{i}", f"result {i} " + "z" * 800)
    raise AssertionError("the loop never summarized")


def plain_summary(messages: list[Any]) -> str:
    return f"summary of {len(messages)} messages"


class TypedSummary:
    def summarize(self, ask: SummaryRequest) -> SummaryResult:
        return SummaryResult(f"summary of {len(ask.messages)} messages")


POLICIES = {
    "default": Policy.default(context_limit=3_000),
    "seed": Policy.seed(context_limit=3_000, echo=False),
}


@pytest.mark.parametrize("kind", ["a plain callable", "a Summarizes object"])
@pytest.mark.parametrize("engine", sorted(POLICIES))
def test_a_plain_callable_and_a_summarizes_object_both_summarize_through_prepare(
    kind: str, engine: str
) -> None:
    summarizer = plain_summary if kind == "a plain callable" else TypedSummary()
    c, view = loop(summarizer, POLICIES[engine])
    assert any(e.stage in ("summarize", "compact_history") for e in c.events)
    assert check(view) == []


def test_anything_neither_callable_nor_a_summarizes_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match=r"^summarizer: expected .* got str$"):
        Compactor(Policy.default(), MemoryStore(), "gpt-4")  # type: ignore[arg-type]


def test_the_seed_asks_a_summarizes_object_for_its_own_form_of_summary() -> None:
    forms: list[str] = []

    class Either:
        def summarize(self, ask: SummaryRequest) -> str:
            forms.append(ask.form)
            return "s"

    c = Compactor(Policy.seed(echo=False), MemoryStore(), Either())
    c.compact_history(history(2), "port the parser", instructions="the lexer")
    Compactor(Policy.default(), MemoryStore(), Either()).compact_history(
        history(4), "port the parser"
    )
    assert forms == ["seed", "structured"]
