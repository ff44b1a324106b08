"""Ctrl-C anywhere in a call, then the same call retried (what a person does at a prompt).

A ``KeyboardInterrupt`` is raised at the k-th Python function call inside ``prepare``, for k
spread over the whole call: before anything is logged, among the passes (whose records are
appended when the call fails), after the append, while the next call reads the session back
(a second Ctrl-C), while the view is copied out. The retry, with the same list, must go on
with the same conversation: no session restart, no message logged twice, and a resume then
sends exactly the live view."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from context_compact import Compactor, FileStore, Policy, SqliteStore
from context_compact.store.base import Store
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session

FRACTIONS = [(0.7, 0.11), (0.3, 0.05), (0.95, 0.5), (0.02, 0.9)]
"""Where the two Ctrl-C land, as shares of the call's length (the retry reads the session
back first, so a small share lands in that reload)."""


class _Interrupt:
    """A trace function raising ``KeyboardInterrupt`` at the ``at``-th function call."""

    def __init__(self, at: int) -> None:
        self.at, self.calls = at, 0

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            self.calls += 1
            if self.calls == self.at:
                sys.settrace(None)
                raise KeyboardInterrupt


def _calls_of(run: Any) -> int:
    counter = _Interrupt(0)
    sys.settrace(counter)
    try:
        run()
    finally:
        sys.settrace(None)
    return counter.calls


def _store(kind: str, root: Path) -> Store:
    return FileStore(root) if kind == "files" else SqliteStore(root / "s.db")


@pytest.mark.parametrize("kind", ["files", "sqlite"])
def test_a_call_interrupted_anywhere_then_retried_goes_on_with_the_same_conversation(
    tmp_path: Path, kind: str
) -> None:
    store = _store(kind, tmp_path)
    policy = Policy.default(context_limit=5_000)
    live = Compactor(policy, store, BenchSummarizer(), session="s")
    (tmp_path / "twin").mkdir()
    # The same calls, never interrupted, on a store of its own: how long each call is.
    twin = Compactor(policy, _store(kind, tmp_path / "twin"), BenchSummarizer(), session="s")
    w = synthetic_session(12, seed=4)
    pending: list[Any] = [{"role": "user", "content": w.request}]
    mirrored: list[Any] = list(pending)
    interrupted = 0
    for number, turn in enumerate(w.turns):
        size = _calls_of(lambda mirrored=mirrored: twin.prepare(mirrored, w.request))
        if number % 3 == 2:
            # Two Ctrl-C in a row: the second lands in the retry (its reload among others).
            first, second = FRACTIONS[number // 3 % len(FRACTIONS)]
            for at in (max(1, int(size * first)), max(1, int(size * second))):
                sys.settrace(_Interrupt(at))
                try:
                    live.prepare(pending, w.request)
                except KeyboardInterrupt:
                    interrupted += 1
                finally:
                    sys.settrace(None)
        view = live.prepare(pending, w.request)
        pending = [*view, turn.assistant, turn.results]
        mirrored = [*twin.view(), turn.assistant, turn.results]
    assert interrupted >= 6
    records = list(store.records("s"))
    assert [r for r in records if r["kind"] == "restart"] == []
    logged = [json.dumps(r["message"], sort_keys=True) for r in records if r["kind"] == "message"]
    assert len(logged) == len(set(logged))
    resumed = Compactor(policy, _store(kind, tmp_path), BenchSummarizer(), session="s")
    assert json.dumps(resumed.view()) == json.dumps(live.view())
