"""Conversations in one store are tenants: a store shared by them is shared storage, never
shared reading. One conversation's recall, ``recover`` and the inspector's archive answer only
from its own records and the files its own records and index name, whatever path it asks for
(another conversation's index file, the results and archives that index lists)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from context_compact import Compactor, FileStore, MemoryStore, Policy
from context_compact.inspector.data import InspectorError, archive
from context_compact.integrations import Conversations
from context_compact.session.recall import recall, recover
from context_compact.store.base import Store
from histories import pair, user

SECRET = "victim-secret-9931"


def _talk(compactor: Compactor, words: str, turns: int = 10) -> None:
    """A tool loop whose results (each naming ``words``) are persisted, cleared, summarized."""
    messages: list[Any] = [user(f"look for {words}")]
    for turn in range(turns):
        messages = compactor.prepare(messages, words)
        messages += pair(f"toolu_{words}_{turn}", f"{words} line {turn}\n" * 400)
    compactor.prepare(messages, words)


def _listed(store: Store, session: str) -> list[str]:
    """The session's index file (its path follows from the session id) and the files it
    lists: what a tenant that knows another's id could ask for."""
    index = f"{store.root}/.transcripts/sessions/{session}.index.md"
    lines = store.read_text(index).splitlines()
    return [index, *dict.fromkeys(line.split(": ", 1)[1].split(" :: ")[0] for line in lines)]


def _stores(tmp_path: Path) -> list[Store]:
    return [MemoryStore(), FileStore(str(tmp_path / "files"))]


@pytest.mark.parametrize("which", ["memory", "files"])
def test_a_conversation_cannot_read_another_conversations_files_by_their_paths(
    tmp_path: Path, which: str
) -> None:
    store = _stores(tmp_path)[which == "files"]
    chats = Conversations(
        Policy.default(context_limit=4_000), store, token_counter=lambda t: len(t) // 4
    )
    victim, intruder = chats.get("victim"), chats.get("intruder")
    _talk(victim, SECRET)
    _talk(intruder, "intruder-words")
    theirs = _listed(store, "conv-victim")
    assert len(theirs) >= 3  # the index, results' copies, an archive
    assert victim.recall(SECRET).hits >= 1
    for path in theirs:
        assert store.issued(path)
        assert victim.recover_file(path) is not None
        page = intruder.recall(path)
        assert SECRET not in page.text and page.hits == 0
        assert intruder.recover_file(path) is None
        assert recover(store, "conv-intruder", path) is None
        assert SECRET not in recall(store, "conv-intruder", f" {path} ").text
        with pytest.raises(InspectorError):
            archive(store, "conv-intruder", path)
    assert intruder.recall(SECRET).hits == 0


def test_a_path_written_into_a_conversations_own_messages_does_not_make_it_its_own() -> None:
    store = MemoryStore()
    chats = Conversations(
        Policy.default(context_limit=4_000), store, token_counter=lambda t: len(t) // 4
    )
    victim, intruder = chats.get("victim"), chats.get("intruder")
    _talk(victim, SECRET)
    paths = _listed(store, "conv-victim")
    # The intruder's own tool output names every path of the victim's, and gets summarized.
    _talk(intruder, "see " + " ".join(paths))
    for path in paths:
        assert SECRET not in intruder.recall(path).text
        assert intruder.recover_file(path) is None
