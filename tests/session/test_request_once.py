"""The current request is shown once: a summary points at the user message that keeps it
verbatim in view, and states it in full only when no message in view holds it."""

from __future__ import annotations

import json
from typing import Any

from context_compact import Compactor, MemoryStore, Policy
from context_compact.markers import summary_quotes
from histories import call, user

REQUEST = "Port the billing module to the new ledger API; keep every public name. " * 6


def turns(start: int, count: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(start, start + count):
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"{i} " * 600}
        out += [call(f"t{i}"), {"role": "user", "content": [result]}]
    return out


def run(messages: list[dict[str, Any]], request: str, **policy: Any) -> list[Any]:
    """Prepare message by message; the view right after the first summary."""
    c = Compactor(Policy.default(context_limit=8_000, **policy), MemoryStore())
    view: list[Any] = []
    for message in messages:
        view = c.prepare([*view, message], request)
        if any(e.stage == "summarize" for e in c.events):
            return view
    raise AssertionError("never summarized")


def summary(view: list[Any]) -> str:
    return next(m["content"] for m in view if "Conversation summary" in str(m["content"]))


def stated(text: str) -> str:
    """The request the summary message states, read back from its quote."""
    quotes = summary_quotes(text)
    assert quotes is not None
    return quotes[0]


def request_part(text: str) -> str:
    """The summary message up to the summary itself: where the request is stated."""
    return text.split("Conversation summary", 1)[0]


def test_a_first_request_kept_in_view_is_not_repeated_by_the_summary() -> None:
    view = run([user(REQUEST), *turns(0, 40)], REQUEST)
    assert view[0] == user(REQUEST)
    text = summary(view)
    assert stated(text).startswith("(the first user message of this conversation")
    assert REQUEST.strip() not in request_part(text)
    assert json.dumps(view).count("keep every public name") == 6  # the pinned message's own


def test_a_later_request_kept_verbatim_is_named_by_its_message_number() -> None:
    later = "Now also migrate the refund path, with the same rules, and keep its old tests green."
    messages = [user("start with billing"), *turns(0, 6), user(later), *turns(6, 34)]
    view = run(messages, later)
    text = summary(view)
    assert later not in request_part(text)
    seq = messages.index(user(later))
    assert stated(text).startswith(f"(message {seq} of this session, a user message below")
    assert view.index(user(later)) > view.index(next(m for m in view if m["content"] == text))


def test_a_request_shorter_than_a_reference_is_stated_in_full_even_when_kept() -> None:
    view = run([user("fix it"), *turns(0, 40)], "fix it")
    assert view[0] == user("fix it")
    assert stated(summary(view)) == "fix it"


def test_a_request_no_message_holds_is_stated_in_full() -> None:
    view = run([user("start with billing"), *turns(0, 40)], "go on with the task")
    assert stated(summary(view)) == "go on with the task"


def test_a_request_folded_out_of_view_is_stated_in_full() -> None:
    older = "Rewrite the invoice renderer. " * 200  # too big for the pinned budget
    messages = [user("hi"), *turns(0, 3), user(older), *turns(3, 3), user("and quickly")]
    messages += turns(6, 34)
    view = run(messages, older, user_words_share=0.02)
    assert user(older) not in view
    assert stated(summary(view)) == older


def test_the_seed_keeps_its_exact_s_4_4_request_text() -> None:
    c = Compactor(Policy.seed(context_limit=2_000, echo=False), MemoryStore())
    view: list[Any] = []
    for message in [user(REQUEST), *turns(0, 20)]:
        view = c.prepare([*view, message], REQUEST)
    compacted = [m for m in view if str(m["content"]).startswith("[Compacted]")]
    assert compacted and f"Current user request:\n{REQUEST}\n\n" in compacted[0]["content"]
