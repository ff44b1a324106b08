"""The view goes out as private copies: a caller that edits what ``prepare`` returned, in
place, changes neither the session's log nor what a resumed session sends."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from context_compact import Compactor, MemoryStore, Policy
from context_compact.bench.fakes import BenchSummarizer
from context_compact.bench.workload import synthetic_session
from context_compact.session.records import MessageRecord, journal


def _history(turns: int) -> list[dict[str, Any]]:
    workload = synthetic_session(turns, seed=11)
    out: list[dict[str, Any]] = [{"role": "user", "content": workload.request}]
    for turn in workload.turns:
        out += [turn.assistant, turn.results]
    return out


def _vandalize(view: list[dict[str, Any]]) -> None:
    for message in view:
        content = message["content"]
        if isinstance(content, list):
            for block in content:
                block["text"] = "edited by the caller"
                block["content"] = "edited by the caller"
            content.append({"type": "text", "text": "appended by the caller"})
        else:
            message["content"] = "edited by the caller"


@pytest.mark.parametrize("window", [6_000, 400_000])  # a cold start summarized, and whole
def test_editing_the_returned_view_in_place_leaves_the_log_and_a_resumed_view_alone(
    window: int,
) -> None:
    history = _history(60)
    original = copy.deepcopy(history)
    store = MemoryStore()
    policy = Policy.default(context_limit=window)
    live = Compactor(policy, store, BenchSummarizer(), session="s")
    view = live.prepare(history, "fix it")
    sent = copy.deepcopy(view)
    _vandalize(view)
    assert history == original  # the caller's own list was never ours to edit
    logged = [r.message for r in journal(store.records("s"), "s") if isinstance(r, MessageRecord)]
    assert logged == original
    # The live session's log in memory too: what later clearings and summaries copy from.
    assert all(m == original[seq] for seq, m in live.engine.state.msgs.items())
    del live
    resumed = Compactor(policy, store, BenchSummarizer(), session="s")
    assert resumed.engine.view() == sent
