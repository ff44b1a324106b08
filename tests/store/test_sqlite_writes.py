"""SqliteStore writes: one commit per turn, texts compressed once, old databases migrated."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_compact import Compactor
from context_compact.errors import StoreRefused
from context_compact.policy import Policy
from context_compact.store import CorruptJournal, MemoryStore, SqliteStore, witness
from context_compact.store import base as store_base
from context_compact.store.blobrefs import externalize
from context_compact.store.codec import blob_rel, dumps, sha256
from context_compact.store.sqlite import blobs as sqlite_blobs
from context_compact.store.sqlite import journal as sqlite_journal
from context_compact.store.sqlite import schema as schema_module
from context_compact.store.sqlite import sessions as sqlite_sessions
from context_compact.store.text import scan
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.faulty import FaultyStore
from context_compact.testing.workload import synthetic_session
from sqlite_rows import tamper_record


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
    store.db.connection.set_trace_callback(
        lambda sql: commits.append(sql) if sql == "COMMIT" else None
    )
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


def test_a_wrapped_store_batches_a_turn_as_the_store_it_wraps_whichever_came_first(
    tmp_path: Path,
) -> None:
    # Over memory nothing is batched: a block that does nothing.
    with store_base.turn(FaultyStore(MemoryStore(), fail=())):
        pass
    sqlite = SqliteStore(tmp_path / "s.db")
    wrapped, other = FaultyStore(sqlite, fail=()), SqliteStore(tmp_path / "s.db")
    session = wrapped.create_session({})
    with store_base.turn(wrapped):
        path = wrapped.save_blob("kept for the turn " * 100)
        assert not other.issued(path)  # held for the turn's commit, as SQLite's own turn does
        wrapped.append(session, [{"kind": "edit", "path": path}])
    assert other.issued(path)
    with store_base.turn(FaultyStore(MemoryStore(), fail=())):
        pass
    sqlite.close()
    other.close()


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
        store.db.connection.execute(
            "PRAGMA query_only = 1"
        )  # the disk refuses every write from here
        with pytest.raises(StoreRefused) as refused:
            store.append(session, [{"kind": "edit", "path": path}])
        assert refused.value.reason == "read-only" and refused.value.where == str(store.db_path)
    assert store.issued(path)
    assert query(store.db_path, "SELECT count(*) FROM files") == [(0,)]
    store.db.connection.execute("PRAGMA query_only = 0")
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


def old_database(db: Path, migrations: int, page_size: int) -> None:
    """The database the first ``migrations`` migrations make (the layout of that version)."""
    with pytest.MonkeyPatch.context() as old:
        old.setattr(schema_module, "MIGRATIONS", schema_module.MIGRATIONS[:migrations])
        old.setattr(schema_module, "PAGE_SIZE", page_size)
        schema_module.connect(str(db)).close()


def test_a_database_from_before_compression_is_migrated_and_still_read(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    text = "an old tool result\n" * 300
    record = {"kind": "message", "seq": 0, "message": {"role": "user", "content": text}}
    # As version 0003 wrote it: one row per record, its text as it is (no codec column),
    # the index on ids, 4096-byte pages.
    old_database(db, 3, 4096)
    texts: dict[str, bytes] = {}
    body = dumps(externalize(record, texts))
    saved = (text + "!").encode()
    texts[sha256(saved)] = saved
    rel = blob_rel(sha256(saved))
    with contextlib.closing(sqlite3.connect(db)) as raw, raw:
        raw.execute("INSERT INTO sessions (id, created, meta, length) VALUES ('s1', 't', '{}', 1)")
        raw.execute(
            "INSERT INTO messages (session, pos, id, parent, body, link) VALUES (?, 0, ?, ?, ?, ?)",
            ("s1", None, None, body, witness.link(witness.ROOT, body.encode("ascii"))),
        )
        raw.executemany(
            "INSERT INTO blobs (hash, size, body) VALUES (?, ?, ?)",
            [(d, len(data), data) for d, data in texts.items()],
        )
        raw.execute(
            "INSERT INTO files (path, kind, hash, size) VALUES (?, 'blob', ?, ?)",
            (rel, sha256(saved), len(saved)),
        )
    assert query(db, "SELECT count(*) FROM sqlite_master WHERE name = 'messages_by_id'") == [(1,)]
    store = SqliteStore(db)
    names = [name for (name,) in query(db, "SELECT name FROM schema_migrations")]
    assert names == [name for name, _ in schema_module.MIGRATIONS]
    assert query(db, "SELECT count(*) FROM sqlite_master WHERE name = 'messages'") == [(0,)]
    assert query(db, "PRAGMA page_size") == [(4096,)]
    assert query(db, "SELECT count(*) FROM blobs WHERE codec IS NULL") == [(2,)]
    assert list(store.records("s1")) == [record]
    assert [r["seq"] for r in store.search("s1", "OLD TOOL")] == [0]
    assert store.read_text(str(store.root_path / rel)) == text + "!"
    store.append("s1", [{"kind": "event", "note": "after"}])
    store.close()
    again = SqliteStore(db, read_only=True)
    assert [r["kind"] for r in again.records("s1")] == ["message", "event"]
    again.close()


def records_hash(records: list[Any]) -> str:
    text = json.dumps(records, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def test_a_database_the_previous_layout_wrote_reads_verifies_and_takes_appends(
    tmp_path: Path,
) -> None:
    # Written by the code before migration 0006 (scripts/make_old_sqlite_db.py): an engine's
    # session, one row per record; texts under a unique hash index; results persisted, a
    # pack's pieces and an appended index in file_chunks; its witness beside it.
    data = Path(__file__).parent / "data"
    seen = json.loads((data / "layout-0005.json").read_text(encoding="ascii"))
    shutil.copy(data / "layout-0005.db", tmp_path / "s.db")
    shutil.copytree(data / "layout-0005.db-heads", tmp_path / "s.db-heads")
    session = seen["session"]
    store = SqliteStore(tmp_path / "s.db", root=tmp_path / "root")
    records = list(store.records(session))
    assert (len(records), records_hash(records)) == (seen["records"], seen["records_sha256"])
    assert {r["kind"] for r in records} == {"message", "edit", "event", "note"}
    word = "parser"
    assert list(store.search(session, word)) == list(scan(iter(records), word))
    for rel, digest in seen["files"].items():
        # Not exported here: each is served from the database and written out again.
        path = str(store.root_path / rel)
        assert store.issued(path)
        assert hashlib.sha256(store.read_text(path).encode("utf-8")).hexdigest() == digest
    (index,) = [rel for rel in seen["files"] if rel.endswith(".index.md")]
    store.append_file(f"sessions/{session}.index.md", "one more line\n")
    assert store.read_text(str(store.root_path / index)).endswith("one more line\n")
    store.append(session, [{"kind": "note", "text": "after the migration"}])
    store.close()
    again = SqliteStore(tmp_path / "s.db", read_only=True)
    assert list(again.records(session)) == [
        *records,
        {"kind": "note", "text": "after the migration"},
    ]
    again.close()
    tamper_record(tmp_path / "s.db", session, 1, lambda body: body.replace("Step", "STEP"))
    with pytest.raises(CorruptJournal, match="record 1 was altered"):
        list(SqliteStore(tmp_path / "s.db", read_only=True).records(session))


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


ascii_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(
    st.lists(ascii_json, min_size=1, max_size=6),
    st.integers(0, 10**6),
    st.booleans(),
    st.randoms(use_true_random=False),
)
def test_a_journal_row_gives_back_each_record_body_and_link_at_its_position(
    values: list[Any], pos: int, compress: bool, rng: Any
) -> None:
    bodies = [dumps({"kind": "note", "value": value}) for value in values]
    links = [f"{rng.getrandbits(128):032x}" for _ in bodies]
    row = sqlite_journal.row("s", pos, bodies, links, compress)
    expected = [
        (pos + i, body, link) for i, (body, link) in enumerate(zip(bodies, links, strict=True))
    ]
    assert sqlite_journal.expand(*row[1:]) == expected


@given(st.lists(st.integers(0, 150), min_size=1, max_size=12), st.integers(0, 1000))
def test_a_long_append_takes_rows_of_whole_records_that_read_back_in_order(
    sizes: list[int], pos: int
) -> None:
    bodies = [dumps({"pad": "x" * size}) for size in sizes]
    links = [f"{i:032x}" for i in range(len(bodies))]
    with pytest.MonkeyPatch.context() as small:
        small.setattr(sqlite_journal, "ROW_CHARS", 200)
        rows = sqlite_journal.rows("s", pos, bodies, links)
    entries = [entry for row in rows for entry in sqlite_journal.expand(*row[1:])]
    assert entries == [
        (pos + i, b, link) for i, (b, link) in enumerate(zip(bodies, links, strict=True))
    ]
    for row in rows:
        held = [b for at, b, _ in sqlite_journal.expand(*row[1:])]
        assert len(held) == 1 or sum(len(b) + 1 for b in held) <= 200 + 1


@given(st.lists(st.integers(1, 5), min_size=1, max_size=8), st.data())
def test_reading_any_range_of_positions_gives_exactly_those_records(
    batches: list[int], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = SqliteStore(Path(folder) / "s.db")
        session = store.create_session({})
        n = 0
        for size in batches:
            store.append(session, [{"kind": "note", "n": n + i} for i in range(size)])
            n += size
        start = data.draw(st.integers(0, n))
        stop = data.draw(st.integers(start, n + 2))
        with store.db.lock:
            read = sqlite_journal.read(store.db.connection, session, start, stop)
            picked = data.draw(st.lists(st.integers(0, n + 1), max_size=6))
            found = sqlite_journal.at(store.db.connection, session, picked)
        store.close()
    assert [json.loads(body)["n"] for _, body, _ in read] == list(range(start, min(stop, n)))
    assert [pos for pos, _, _ in found] == sorted({p for p in picked if p < n})


def test_a_journal_row_damaged_inside_is_named_by_its_first_record(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    session = store.create_session({})
    store.append(session, [{"kind": "note", "n": 0}])
    store.append(session, [{"kind": "note", "n": i, "pad": "x" * 400} for i in (1, 2, 3)])
    store.close()
    with contextlib.closing(sqlite3.connect(tmp_path / "s.db")) as raw, raw:
        (body,) = raw.execute("SELECT body FROM journal WHERE pos = 1").fetchone()
        assert isinstance(body, bytes)  # compressed: flipped bytes do not decode
        flipped = body[:4] + bytes(b ^ 0xFF for b in body[4:12]) + body[12:]
        raw.execute("UPDATE journal SET body = ? WHERE pos = 1", (flipped,))
    with pytest.raises(CorruptJournal, match="record 1 was altered") as found:
        list(SqliteStore(tmp_path / "s.db", read_only=True).records(session))
    assert found.value.whole == 1


def test_two_texts_whose_hashes_share_a_tag_are_both_kept_and_told_apart(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    # Digests made up to share their first 8 bytes (a real collision is not at hand).
    first, second = "ab" * 8 + "0" * 48, "ab" * 8 + "1" * 48
    assert sqlite_blobs.tag(first) == sqlite_blobs.tag(second)
    with store.db.lock, store.db.transaction():
        sqlite_blobs.insert(store.db.connection, [(first, b"one text " * 40)])
        sqlite_blobs.insert(
            store.db.connection, [(second, b"another " * 40), (first, b"not stored")]
        )
    with store.db.lock:
        found = sqlite_blobs.fetch(store.db.connection, [first, second, "ab" * 8 + "2" * 48])
        count = store.db.connection.execute("SELECT count(*) FROM blobs").fetchone()
    store.close()
    assert found == {first: b"one text " * 40, second: b"another " * 40}
    assert count == (2,)


def wal_restarts(db: Path) -> int:
    """How many times the WAL was restarted from its start (its header's checkpoint count)."""
    return int.from_bytes(Path(f"{db}-wal").read_bytes()[12:16], "big")


def test_the_wal_restarts_after_the_background_checkpoints_instead_of_growing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_sessions, "CHECKPOINT_EVERY", 16)
    store = SqliteStore(tmp_path / "s.db")
    session = store.create_session({})
    assert wal_restarts(store.db_path) == 0
    # Appends back to back race each background checkpoint; a WAL that was never wholly
    # copied when a write started is never restarted, only grows (sqlite_tx.Checkpointer).
    for n in range(600):
        store.append(session, [{"kind": "note", "pad": "x" * 2_000, "n": n}])
    assert wal_restarts(store.db_path) > 0
    assert [r["n"] for r in store.records(session)] == list(range(600))
    store.close()
