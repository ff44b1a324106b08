"""A store's search: the FTS5 side index answers exactly what a scan of the journal answers."""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_compact.store import FileStore, MemoryStore, SqliteStore
from context_compact.store.base import Searches, search
from context_compact.store.sqlite.index import VERSION, trigrams
from context_compact.store.text import scan
from sqlite_rows import tamper_record

# Letters whose casefold is not one character to one (ß -> ss, ﬁ -> fi, K Kelvin -> k),
# a lone surrogate, quotes (FTS5 query syntax), spaces and newlines.
ALPHABET = "abcAB ß ﬁſKk\"'*-:\n\ud800é"
texts = st.text(alphabet=ALPHABET, max_size=40)


def message(text: str, shape: int) -> dict[str, Any]:
    if shape == 0:
        return {"role": "user", "content": text}
    if shape == 1:
        return {"role": "assistant", "content": [{"type": "text", "text": text}]}
    if shape == 2:
        block = {"type": "tool_use", "id": "t", "name": "bash", "input": {"cmd": text}}
        return {"role": "assistant", "content": [block]}
    block = {"type": "tool_result", "tool_use_id": "t", "content": text}
    return {"role": "user", "content": [block]}


def records(pieces: list[tuple[str, int]], start: int = 0) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n, (text, shape) in enumerate(pieces, start):
        out.append({"kind": "message", "seq": n, "message": message(text, shape)})
        out.append({"kind": "edit", "op": "note", "text": text})  # not searchable
    return out


def stores(where: Path) -> Iterator[Any]:
    yield SqliteStore(where / "s.db")
    yield FileStore(where / "files")


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    first=st.lists(st.tuples(texts, st.integers(0, 3)), max_size=8),
    later=st.lists(st.tuples(texts, st.integers(0, 3)), max_size=4),
    queries=st.lists(texts.filter(lambda q: q.strip() != ""), min_size=1, max_size=6),
)
def test_the_index_finds_exactly_what_a_scan_finds(
    first: list[tuple[str, int]], later: list[tuple[str, int]], queries: list[str]
) -> None:
    # Queries also taken from the logged texts, so most of them hit something.
    queries = queries + [text[1:5] for text, _ in first + later if len(text) > 4]
    with tempfile.TemporaryDirectory() as where:
        for store in stores(Path(where)):
            session = store.create_session({})
            store.append(session, records(first))
            for query in queries:
                expected = list(scan(store.records(session), query))
                assert list(store.search(session, query)) == expected
            store.append(session, records(later, len(first)))  # caught up on the next search
            for query in queries:
                expected = list(scan(store.records(session), query))
                assert list(store.search(session, query)) == expected
            if any(trigrams(query.casefold()) for query in queries):
                # The index answered (not a silent fallback to the scan): it holds every message.
                docs = (
                    store._search.index._open().execute("SELECT count(*) FROM docs").fetchone()[0]
                )
                assert docs == len(first) + len(later)
            store.close()


def test_a_long_query_asks_the_index_for_a_few_trigrams_of_it() -> None:
    assert trigrams("ab") is None
    assert trigrams("x\ud800yz") is None
    picked = trigrams("abcdefghijklmnopqrstuvwxyz" * 3)
    assert picked is not None and 2 < len(picked) <= 8
    assert all(t in "abcdefghijklmnopqrstuvwxyz" * 3 for t in picked)


@pytest.mark.parametrize("kind", ["sqlite", "files"])
def test_the_first_search_indexes_what_is_there_and_the_next_only_what_is_new(
    tmp_path: Path, kind: str
) -> None:
    store: Any = SqliteStore(tmp_path / "s.db") if kind == "sqlite" else FileStore(tmp_path)
    session = store.create_session({})
    store.append(session, records([("needle one", 0), ("hay", 3)]))
    assert [r["seq"] for r in store.search(session, "NEEDLE")] == [0]
    index = store._search.index.path
    assert index.exists()
    size = index.stat().st_size + Path(f"{index}-wal").stat().st_size
    assert [r["seq"] for r in store.search(session, "needle")] == [0]
    assert index.stat().st_size + Path(f"{index}-wal").stat().st_size == size  # nothing new
    store.append(session, records([("another needle", 1)], 2))
    assert [r["seq"] for r in store.search(session, "needle")] == [0, 2]
    store.close()


def test_a_session_made_again_under_the_same_id_is_indexed_afresh(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    session = store.create_session({"id": "again"})
    store.append(session, records([("old needle", 0), ("more", 0)]))
    assert len(list(store.search(session, "needle"))) == 1
    store.delete_session(session)
    store.create_session({"id": "again"})
    store.append(session, records([("new text", 0)]))
    assert list(store.search(session, "needle")) == []
    assert [r["message"]["content"] for r in store.search(session, "new")] == ["new text"]
    store.close()


@pytest.mark.parametrize("kind", ["sqlite", "files"])
def test_a_damaged_index_file_is_rebuilt_from_the_journal(tmp_path: Path, kind: str) -> None:
    store: Any = SqliteStore(tmp_path / "s.db") if kind == "sqlite" else FileStore(tmp_path)
    session = store.create_session({})
    store.append(session, records([("a needle", 0)]))
    list(store.search(session, "needle"))
    index = store._search.index.path
    store.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    index.write_bytes(b"not a database at all" * 100)
    again: Any = SqliteStore(tmp_path / "s.db") if kind == "sqlite" else FileStore(tmp_path)
    assert [r["seq"] for r in again.search(session, "needle")] == [0]
    again.close()


def test_an_index_of_another_version_is_rebuilt_from_the_journal(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    session = store.create_session({})
    store.append(session, records([("a needle", 0)]))
    list(store.search(session, "needle"))
    assert store._search.index is not None
    index = store._search.index.path
    store.close()
    with sqlite3.connect(index) as db:
        db.execute("DELETE FROM docs")  # what a rebuild would find again
        db.execute(f"PRAGMA user_version = {VERSION + 1}")
    db.close()
    again = SqliteStore(tmp_path / "s.db")
    assert [r["seq"] for r in again.search(session, "needle")] == [0]
    again.close()
    with sqlite3.connect(index) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == VERSION
    db.close()


def test_a_read_only_store_and_a_store_without_an_index_scan(tmp_path: Path) -> None:
    SqliteStore(tmp_path / "s.db").close()
    writer = SqliteStore(tmp_path / "s.db")
    session = writer.create_session({})
    writer.append(session, records([("a needle", 0)]))
    writer.close()
    reader = SqliteStore(tmp_path / "s.db", read_only=True)
    assert [r["seq"] for r in reader.search(session, "needle")] == [0]
    assert not Path(f"{tmp_path / 's.db'}-search").exists()
    reader.close()
    memory = MemoryStore()
    session = memory.create_session({})
    memory.append(session, records([("a needle", 0)]))
    assert not isinstance(memory, Searches)
    assert [r["seq"] for r in search(memory, session, "NEEDLE")] == [0]


def test_searching_an_unknown_session_is_a_key_error(tmp_path: Path) -> None:
    for store in stores(tmp_path):
        with pytest.raises(KeyError):
            list(store.search("nope", "needle"))
        store.close()


def test_a_search_refuses_a_journal_that_is_not_what_was_written(tmp_path: Path) -> None:
    from context_compact.store import CorruptJournal

    store = SqliteStore(tmp_path / "s.db")
    session = store.create_session({})
    store.append(session, records([("the original needle", 0), ("more", 1)]))
    store.close()
    tamper_record(tmp_path / "s.db", session, 0, lambda body: body.replace("original", "ORIGINAL"))
    again = SqliteStore(tmp_path / "s.db")
    with pytest.raises(CorruptJournal, match="record 0 was altered"):
        list(again.search(session, "needle"))
    again.close()
