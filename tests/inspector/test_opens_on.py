"""The ``ui`` page opens on a session worth showing: the newest in which the model answered,
not a newer one-message import (whose page would read "request 1 … request 0"); the newest
when none has an answer; the one session with ``inspect --serve``."""

from __future__ import annotations

from typing import Any

from context_compact import Compactor, MemoryStore, Policy
from context_compact.inspector import Inspector


def session(store: Any, sid: str, messages: list[dict[str, Any]]) -> None:
    c = Compactor(Policy.default(context_limit=50_000), store, session=sid)
    c.prepare(messages, "go")


def test_the_page_opens_on_the_newest_session_the_model_answered_in() -> None:
    store = MemoryStore()
    session(
        store,
        "aaaaaaaaaaa1",
        [{"role": "user", "content": "go"}, {"role": "assistant", "content": "done"}],
    )
    session(store, "bbbbbbbbbbb2", [{"role": "user", "content": "just one message"}])
    listed = Inspector(store).answer("/api/sessions", {})
    assert listed["sessions"][0]["id"] == "bbbbbbbbbbb2"  # still listed, newest first
    assert listed["selected"] == "aaaaaaaaaaa1"


def test_without_any_answer_the_page_opens_on_the_newest() -> None:
    store = MemoryStore()
    session(store, "aaaaaaaaaaa1", [{"role": "user", "content": "one"}])
    session(store, "bbbbbbbbbbb2", [{"role": "user", "content": "two"}])
    assert Inspector(store).answer("/api/sessions", {})["selected"] == "bbbbbbbbbbb2"


def test_a_page_for_one_session_opens_on_it() -> None:
    store = MemoryStore()
    session(store, "aaaaaaaaaaa1", [{"role": "user", "content": "one"}])
    assert Inspector(store, only="aaaaaaaaaaa1").answer("/api/sessions", {})["selected"] == (
        "aaaaaaaaaaa1"
    )
