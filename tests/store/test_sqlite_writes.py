"""SqliteStore writes: one commit per turn, texts compressed once, old databases migrated."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_compact import Compactor
from context_compact.bench.fakes import BenchSummarizer
from context_compact.bench.workload import synthetic_session
from context_compact.policy import Policy
from context_compact.store import SqliteStore, sqlite_blobs
from context_compact.store import schema as schema_module


def query(db: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(db)) as raw:
        return raw.execute(sql, args).fetchall()


@given(st.binary(max_size=3000))
def test_a_blob_body_unpacks_to_its_bytes(data: bytes) -> None:
    assert sqlite_blobs.unpack(*sqlite_blobs.pack(data)) == data


def test_text_is_stored_compressed_and_random_bytes_as_they_are(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    text = "def handler(request):\n    return cache.get(request)\n" * 100
    store.save_blob(text)
    noise = os.urandom(4000)
    store.save_media(noise, "image/png")
    rows = dict(
        (size, (codec, stored))
        for size, codec, stored in query(
            store.db_path, "SELECT size, codec, length(body) FROM blobs"
        )
    )
    assert rows[len(text)][0] == "zlib" and rows[len(text)][1] < len(text) / 4
    assert rows[len(noise)] == (None, len(noise))
    store.close()


def test_every_turn_of_an_agent_loop_commits_once(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    commits: list[str] = []
    store._db.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    compactor = Compactor(Policy.default(context_limit=4_000), store, BenchSummarizer())
    work = synthetic_session(80, seed=3)
    messages: list[Any] = [{"role": "user", "content": work.request}]
    per_turn = []
    for turn in work.turns:
        before = len(commits)
        messages = compactor.prepare(messages, work.request)
        per_turn.append(len(commits) - before)
        messages += [turn.assistant, turn.results]
    session = compactor.session_id
    assert session is not None
    edits = [r for r in store.records(session) if r["kind"] == "edit"]
    # The session persisted, cleared and summarized (several files a turn), all in one commit.
    assert {"persist", "clear", "summarize"} <= {e.get("op") for e in edits}
    assert per_turn == [1] * len(work.turns)
    store.close()


def test_a_turns_files_are_committed_with_its_append(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    other = SqliteStore(tmp_path / "s.db")
    session = store.create_session({})
    with store.turn():
        path = store.save_blob("kept for the turn " * 100)
        assert store.issued(path) and Path(path).exists()
        assert not other.issued(path)  # not committed yet: no record names it yet either
        store.append(session, [{"kind": "edit", "path": path}])
        assert other.issued(path)
    store.close()
    other.close()


def test_a_failed_append_keeps_the_turns_files_for_the_next_commit(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    session = store.create_session({})
    with store.turn():
        path = store.save_blob("a result " * 200)
        store._db.execute("PRAGMA query_only = 1")  # the disk refuses every write from here
        with pytest.raises(sqlite3.OperationalError):
            store.append(session, [{"kind": "edit", "path": path}])
    assert store.issued(path)
    assert query(store.db_path, "SELECT count(*) FROM files") == [(0,)]
    store._db.execute("PRAGMA query_only = 0")
    store.append(session, [{"kind": "edit", "path": path}])
    assert query(store.db_path, "SELECT count(*) FROM files") == [(1,)]
    store.close()
    os.remove(path)
    assert SqliteStore(tmp_path / "s.db").read_text(path) == "a result " * 200


def test_a_process_killed_inside_a_turn_leaves_neither_its_files_nor_its_records(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    store = SqliteStore(db)
    session = store.create_session({})
    store.append(session, [{"kind": "event", "note": "before"}])
    store.close()
    child = textwrap.dedent(
        f"""
        import os, signal, sys
        from context_compact.store import SqliteStore
        store = SqliteStore({str(db)!r})
        with store.turn():
            print(store.save_blob("never committed " * 100), flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL
    path = done.stdout.strip()
    after = SqliteStore(db)
    assert not after.issued(path)  # the view that would name it was never returned
    assert list(after.records(session)) == [{"kind": "event", "note": "before"}]
    after.close()


def test_a_database_from_before_compression_is_migrated_and_still_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "s.db"
    text = "an old tool result\n" * 300
    with monkeypatch.context() as old:
        # As version 0003 wrote it: no codec column, the index on ids, 4096-byte pages.
        old.setattr(schema_module, "MIGRATIONS", schema_module.MIGRATIONS[:3])
        old.setattr(schema_module, "PAGE_SIZE", 4096)
        old.setattr(sqlite_blobs, "INSERT", "INSERT INTO blobs (hash, size, body) VALUES (?, ?, ?)")
        old.setattr(
            sqlite_blobs, "row", lambda data, digest=None, compress=True: (digest, len(data), data)
        )
        store = SqliteStore(db)
        session = store.create_session({})
        record = {"kind": "message", "seq": 0, "message": {"role": "user", "content": text}}
        store.append(session, [record])
        path = store.save_blob(text + "!")
        store.close()
    assert query(db, "SELECT count(*) FROM sqlite_master WHERE name = 'messages_by_id'") == [(1,)]
    store = SqliteStore(db)
    names = [name for (name,) in query(db, "SELECT name FROM schema_migrations")]
    assert names == [name for name, _ in schema_module.MIGRATIONS]
    assert query(db, "SELECT count(*) FROM sqlite_master WHERE name = 'messages_by_id'") == [(0,)]
    assert query(db, "PRAGMA page_size") == [(4096,)]
    assert query(db, "SELECT count(*) FROM blobs WHERE codec IS NULL") == [(2,)]
    assert list(store.records(session)) == [record]
    assert [r["seq"] for r in store.search(session, "OLD TOOL")] == [0]
    os.remove(path)
    assert store.read_text(path) == text + "!"
    store.close()


def test_a_new_database_has_small_pages(tmp_path: Path) -> None:
    SqliteStore(tmp_path / "s.db").close()
    assert query(tmp_path / "s.db", "PRAGMA page_size") == [(schema_module.PAGE_SIZE,)]


def test_a_store_opened_without_compression_stores_texts_as_they_are(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db", compress=False)
    text = "the same line again\n" * 200
    path = store.save_blob(text)
    assert query(store.db_path, "SELECT codec, length(body) FROM blobs") == [(None, len(text))]
    os.remove(path)
    assert store.read_text(path) == text
    store.close()


def test_a_read_only_store_refuses_a_file_inside_a_turn_before_writing_it(tmp_path: Path) -> None:
    SqliteStore(tmp_path / "s.db").close()
    reader = SqliteStore(tmp_path / "s.db", read_only=True)
    with reader.turn(), pytest.raises(OSError, match="reading only"):
        reader.save_blob("not written")
    assert not (tmp_path / ".task_outputs").exists()
    reader.close()
