"""Issue 18: a store that cannot be written still opens for reading, and says why writes
are refused."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from context_compact import Compactor, Policy
from context_compact.errors import StoreRefused
from context_compact.session.recall import recall
from context_compact.store import ReadOnlyStore, SqliteStore
from histories import call, results, user


def written(tmp_path: Path) -> tuple[str, list[object], str]:
    store = SqliteStore(tmp_path / "s.db")
    c = Compactor(Policy.default(context_limit=4_000), store)
    view = c.prepare([user("t"), call("a"), results(("a", "line of output\n" * 3_000))], "t")
    path = view[-1]["content"][0]["content"].split("Full output: ")[1].split("\n")[0]
    assert c.session_id is not None
    store.close()
    return c.session_id, view, path


def test_a_read_only_store_reads_views_recall_and_sessions(tmp_path: Path) -> None:
    sid, view, path = written(tmp_path)
    Path(path).unlink()  # served from the database, not written back
    store = SqliteStore(tmp_path / "s.db", read_only=True)
    assert [m["id"] for m in store.list_sessions()] == [sid]
    assert Compactor(Policy.default(context_limit=4_000), store, session=sid).view() == view
    assert "line of output" in recall(store, sid, path).text
    assert not Path(path).exists()
    store.close()


def test_a_read_only_store_refuses_writes_saying_why(tmp_path: Path) -> None:
    sid, _, _ = written(tmp_path)
    store = SqliteStore(tmp_path / "s.db", read_only=True)
    for write in (
        lambda: store.append(sid, [{"kind": "event"}]),
        lambda: store.create_session({}),
        lambda: store.save_blob("x"),
    ):
        with pytest.raises(ReadOnlyStore, match="open for reading only: opened with read_only"):
            write()
    store.close()


def test_a_read_only_open_of_an_old_schema_says_to_upgrade_it_where_it_can_be_written(
    tmp_path: Path,
) -> None:
    written(tmp_path)
    db = sqlite3.connect(tmp_path / "s.db")
    db.execute("DELETE FROM schema_migrations WHERE name = '0003_journal_links'")
    db.commit()
    db.close()
    with pytest.raises(StoreRefused, match="lacks migration '0003_journal_links'"):
        SqliteStore(tmp_path / "s.db", read_only=True)
