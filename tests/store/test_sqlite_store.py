"""SqliteStore: tables, texts stored once, exports re-served, migrations."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from store_helpers import big_text, turn, whole_turns

from context_compact.errors import StoreRefused
from context_compact.store import SqliteStore, UnknownMigration
from context_compact.store.sqlite import journal as sqlite_journal
from context_compact.store.sqlite import schema as schema_module


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore(tmp_path / "store.db")
    yield opened
    opened.close()


def query(db: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(db)) as raw:
        return raw.execute(sql, args).fetchall()


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def test_each_append_is_one_journal_row_of_all_its_records(store: SqliteStore) -> None:
    session = store.create_session({})
    store.append(session, [*turn(0), {"kind": "observe", "tokens": 5}])
    store.append(session, [{"kind": "event", "note": "second"}])
    db = store.db_path
    assert query(db, "SELECT pos, count FROM journal ORDER BY pos") == [(0, 4), (4, 1)]
    assert query(db, "SELECT length FROM sessions") == [(5,)]
    kinds = [record["kind"] for record in store.records(session)]
    assert kinds == ["message", "edit", "event", "observe", "event"]


def test_a_long_string_in_a_message_is_stored_once_as_a_blob(store: SqliteStore) -> None:
    session = store.create_session({})
    text = big_text(7)
    record = {"kind": "message", "id": "a", "parent": None, "message": {"content": text}}
    store.append(session, [record, {**record, "id": "b"}])
    path = store.save_blob(text)
    store.save_blob(text)
    db = store.db_path
    assert query(db, "SELECT count(*) FROM blobs WHERE hash = ?", digest(text)) == [(1,)]
    rows = query(db, "SELECT pos, count, body, links, codec FROM journal")
    assert all(text not in body for row in rows for _, body, _ in sqlite_journal.expand(*row))
    assert query(db, "SELECT hash FROM files WHERE path LIKE '%sha256-%'") == [(digest(text),)]
    assert store.read_text(path) == text
    assert list(store.records(session))[1]["message"]["content"] == text


def test_a_short_string_stays_inline(store: SqliteStore) -> None:
    session = store.create_session({})
    store.append(session, [{"kind": "event", "note": "n" * 1023}])
    assert query(store.db_path, "SELECT count(*) FROM blobs") == [(0,)]


def test_a_deleted_export_is_served_from_the_database_and_written_again(
    store: SqliteStore,
) -> None:
    paths = {
        store.save_blob("blob \ud800"): "blob \ud800",
        store.save_tool_result("t1", "result"): "result",
        store.save_messages([{"role": "user"}]): '{"role": "user"}\n',
        store.write_transcript([{"role": "user"}]): '{"role": "user"}\n',
        store.append_file("index.md", "one\n"): "one\n",
    }
    store.append_file("index.md", "two\n")
    paths[store.append_file("index.md", "")] = "one\ntwo\n"
    for path, text in paths.items():
        os.remove(path)
        assert store.read_text(path) == text
        assert Path(path).read_bytes() == text.encode("utf-8", "surrogatepass")


def test_an_appended_file_that_fell_behind_the_database_is_exported_whole(
    store: SqliteStore,
) -> None:
    path = store.append_file("index.md", "one\n")
    Path(path).write_text("", encoding="utf-8")  # as if killed before the file write
    store.append_file("index.md", "two\n")
    assert Path(path).read_text(encoding="utf-8") == "one\ntwo\n"


def test_a_seed_file_that_was_there_before_is_copied_into_the_database(
    store: SqliteStore,
) -> None:
    existing = store.results_dir / "old.txt"
    existing.parent.mkdir(parents=True)
    existing.write_text("from before", encoding="utf-8")
    path = store.save_tool_result("old", "new")
    os.remove(path)
    assert store.read_text(path) == "from before"


def test_files_are_recorded_relative_to_root(store: SqliteStore) -> None:
    store.save_blob("x")
    (path,) = query(store.db_path, "SELECT path FROM files")[0]
    assert path == f".task_outputs/tool-results/sha256-{digest('x')[:32]}.txt"


def test_the_connection_uses_wal_and_the_schema_checks_references(store: SqliteStore) -> None:
    assert query(store.db_path, "PRAGMA journal_mode") == [("wal",)]
    with pytest.raises(sqlite3.IntegrityError):
        store.db.connection.execute(
            "INSERT INTO journal (session, pos, count, body, links) VALUES ('none', 0, 1, '{}', '')"
        )


def test_opening_a_migrated_database_again_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    SqliteStore(db).close()
    applied = query(db, "SELECT name, applied_at FROM schema_migrations")
    assert [name for name, _ in applied] == [name for name, _ in schema_module.MIGRATIONS]
    with contextlib.closing(sqlite3.connect(db)) as raw:
        assert schema_module.migrate(raw) == []
    SqliteStore(db).close()
    assert query(db, "SELECT name, applied_at FROM schema_migrations") == applied


def test_a_database_from_a_newer_version_is_refused_by_migration_name(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    SqliteStore(db).close()
    with contextlib.closing(sqlite3.connect(db)) as raw, raw:
        raw.execute("INSERT INTO schema_migrations VALUES ('0099_from_the_future', 'x')")
    with pytest.raises(UnknownMigration, match="0099_from_the_future"):
        SqliteStore(db)


def test_a_failing_migration_leaves_nothing_of_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "s.db"
    broken = ("0002_broken", "CREATE TABLE half (x);\nCREATE TABLE (;\n")
    monkeypatch.setattr(schema_module, "MIGRATIONS", [*schema_module.MIGRATIONS, broken])
    with pytest.raises(StoreRefused) as refused:
        SqliteStore(db)
    assert isinstance(refused.value.__cause__, sqlite3.OperationalError)
    assert query(db, "SELECT name FROM sqlite_master WHERE name = 'half'") == []
    assert "0002_broken" not in {n for (n,) in query(db, "SELECT name FROM schema_migrations")}
    monkeypatch.undo()
    reopened = SqliteStore(db)  # the first migration was applied and kept
    reopened.close()


def test_sessions_in_one_database_are_listed_after_a_restart(tmp_path: Path) -> None:
    first = SqliteStore(tmp_path / "s.db")
    ids = [first.create_session({"n": n}) for n in range(3)]
    first.append(ids[1], turn(0))
    first.close()
    again = SqliteStore(tmp_path / "s.db")
    try:
        assert [m["id"] for m in again.list_sessions()] == ids[::-1]
        assert whole_turns(list(again.records(ids[1]))) == 1
    finally:
        again.close()


def test_a_store_is_usable_from_several_threads(store: SqliteStore) -> None:
    from concurrent.futures import ThreadPoolExecutor

    sessions = [store.create_session({}) for _ in range(4)]

    def write(session: str) -> int:
        for n in range(20):
            store.append(session, turn(n))
            store.save_blob(f"{session} {n}")
        return whole_turns(list(store.records(session)))

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(write, sessions)) == [20] * 4
