"""The fresh-context handoff (``Policy.default(handoff=True)``): where a summary would be
made the view starts afresh, with no summarizer call, keeping every rule a summary keeps."""

from __future__ import annotations

from typing import Any

import pytest
from test_long_turn import REQUEST, run_loop
from test_notes import note_text, work

from context_compact import Compactor, MemoryStore, Policy
from context_compact.markers import HANDOFF, NOTES_TAG, REQUEST_TAG, SUMMARY_TAG
from context_compact.quoting import opening, unquote
from context_compact.testing.reach import reach


class Counted:
    """A summarizer that counts its calls (a handoff makes none)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, messages: list[Any]) -> str:
        self.calls += 1
        return "## Next step\n- go on"


def handoff_message(view: list[Any]) -> str:
    texts = [
        str(m["content"])
        for m in view
        if isinstance(m.get("content"), str) and opening(m["content"], REQUEST_TAG)
    ]
    assert texts, "no handoff in the view"
    return texts[-1]


@pytest.mark.parametrize("mode", ["start", "interleaved", "redacted", "off"])
def test_a_handoff_in_a_long_tool_loop_keeps_every_request_valid_and_loses_nothing(
    mode: str,
) -> None:
    store, summarizer = MemoryStore(), Counted()
    policy = Policy.default(context_limit=20_000, handoff=True)
    compactor = Compactor(policy, store, summarizer)
    # run_loop asserts that the API would accept every request and that each fits the window.
    results = run_loop(compactor, mode, 150, 3, 2_000, 20_000)
    view = compactor.view()
    assert sum(1 for e in compactor.events if e.stage == "summarize") >= 2
    assert summarizer.calls == 0
    text = handoff_message(view)
    token = opening(text, REQUEST_TAG)
    assert text.startswith("[Handoff]") and token is not None
    assert unquote(text, SUMMARY_TAG, token) == [HANDOFF]
    assert unquote(text, REQUEST_TAG, token) != [] and REQUEST in str(view[0]["content"])
    found = reach(view, store, store.root, results, max_reads=2)
    assert found.lost == 0, found.lost_items[:3]


def test_a_handoff_carries_the_notes_and_a_resume_shows_the_same_view() -> None:
    store, summarizer = MemoryStore("/memory"), Counted()
    policy = Policy.default(context_limit=12_000, summarize_ahead=True, handoff=True)
    compactor = Compactor(policy, store, summarizer, session="s")
    sent: list[Any] = []
    for message in work(30):
        sent.append(message)
        if message["role"] == "user":
            sent = compactor.prepare(sent, "fix the parser")
    assert summarizer.calls == 0
    text = handoff_message(compactor.view())
    token = opening(text, REQUEST_TAG)
    assert token is not None
    [notes] = unquote(text, NOTES_TAG, token)
    assert note_text(0) in notes or "older note(s)" in text
    resumed = Compactor(policy, store, summarizer, session="s")
    assert resumed.view() == compactor.view()


def test_without_the_handoff_the_same_loop_asks_the_summarizer() -> None:
    summarizer = Counted()
    compactor = Compactor(Policy.default(context_limit=20_000), MemoryStore(), summarizer)
    run_loop(compactor, "off", 150, 3, 2_000, 20_000)
    assert summarizer.calls > 0
