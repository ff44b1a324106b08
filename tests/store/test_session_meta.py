"""A session's meta, read once into ``SessionMeta``: its fields are what was stored when they
have the field's type, else None; the keys no field names stay in ``raw``."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_compact.store import MemoryStore, SqliteStore
from context_compact.store.meta import SessionMeta, meta_of, sessions_of, source_of


def test_an_imported_sessions_meta_reads_as_its_fields_and_its_source_in_words(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "s.db")
    sid = store.create_session(
        {
            "source": "import",
            "format": "claude_code",
            "file": "/logs/run.jsonl",
            "name": "run/sidechain-2",
            "system": "You are terse.",
            "policy": {"context_limit": 40_000},
            "notes": {"dropped": 1},
        }
    )
    meta = meta_of(store, sid)
    assert meta is not None and meta.id == sid and meta.created is not None
    assert (meta.format, meta.file, meta.system) == (
        "claude_code",
        "/logs/run.jsonl",
        "You are terse.",
    )
    assert meta.source_text == "import claude_code: run/sidechain-2"
    assert meta.context_limit == 40_000
    assert meta.raw["notes"] == {"dropped": 1}
    assert meta_of(store, "no-such-session") is None
    store.close()


def test_a_compaction_and_an_agents_session_say_where_they_came_from() -> None:
    store = MemoryStore()
    compacted = store.create_session({"source": "compact", "policy_name": "seed", "of": "abc"})
    agent = store.create_session({"engine": "default"})
    by_id = {m.id: m for m in sessions_of(store)}
    assert by_id[compacted].source_text == "compact seed of abc"
    assert by_id[compacted].compacted_from == "abc"
    assert by_id[agent].source_text == "agent" and by_id[agent].engine == "default"
    assert [m.id for m in sessions_of(store)] == [m["id"] for m in store.list_sessions()]


@pytest.mark.parametrize(
    ("stored", "unread"),
    [
        ({"system": ["a", "list"], "format": 3, "policy": "no"}, ["system", "format", "policy"]),
        ({"created": 17, "name": None, "policy": {"context_limit": True}}, ["created", "name"]),
        ({"policy": {"context_limit": "40000"}, "of": {"a": 1}}, ["compacted_from"]),
    ],
)
def test_a_meta_of_unexpected_types_reads_as_none_never_a_crash_later(
    stored: dict[str, object], unread: list[str]
) -> None:
    meta = SessionMeta.read({"id": "s1", **stored})
    assert [getattr(meta, name) for name in unread] == [None] * len(unread)
    assert meta.context_limit is None  # no limit that is an int (True is not one)
    assert isinstance(meta.source_text, str)
    assert meta.raw == {"id": "s1", **stored}


def test_source_of_says_the_same_for_a_stored_dict_and_a_read_meta() -> None:
    stored = {"id": "s", "source": "import", "format": "codex", "file": "/a/b.jsonl"}
    assert source_of(stored) == source_of(SessionMeta.read(stored)) == "import codex: b.jsonl"
