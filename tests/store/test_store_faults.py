"""Store faults (issue 10): disk full, a read-only store, a file deleted behind our back.

Nothing leaves the view without a copy: a call either succeeds with a ``store_error`` event
and the content still in view, or raises ``StoreUnavailable`` naming the store's error.
Never a half-applied edit: a resumed session sees exactly what the live one would send.
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Any

import pytest

from context_compact import Compactor, FileStore, MemoryStore, Policy, SqliteStore, check
from context_compact.errors import CorruptStore, LinkRefused, StoreUnavailable
from context_compact.session.recall import recall
from context_compact.store.base import BatchesTurns, DeletesSessions, KnowsWriters, OnDatabaseFile
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.faulty import FILES, WRITES, FaultyStore, disk_full, read_only
from histories import call, results, user

BIG = "output line\n" * 3_000  # ~36k chars, ~9k tokens


def history(text: str = BIG) -> list[dict[str, Any]]:
    return [user("t"), call("a"), results(("a", text))]


def snapshot(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def store_errors(c: Compactor) -> list[str]:
    return [e.note for e in c.events if e.stage == "store_error"]


@pytest.mark.parametrize("error", [disk_full(), read_only()], ids=["disk full", "read only"])
def test_a_refused_copy_keeps_the_result_in_view_with_a_warning_when_it_fits(
    error: OSError,
) -> None:
    store = FaultyStore(MemoryStore(), fail=FILES, error=error)
    c = Compactor(Policy.default(context_limit=20_000), store)
    given = history()
    before = snapshot(given)
    view = c.prepare(given, "t")
    assert view == given and snapshot(given) == before
    (note,) = store_errors(c)
    assert "persist skipped" in note and os.strerror(error.errno) in note
    assert check(view) == []
    # The journal was written: a resumed session sends the same view.
    resumed = Compactor(Policy.default(context_limit=20_000), store.inner, session=c.session_id)
    assert resumed.view() == view


@pytest.mark.parametrize("policy", [Policy.default(context_limit=4_000), Policy.seed(echo=False)])
def test_a_refused_copy_over_the_limit_is_a_clear_error_and_removes_nothing(policy: Any) -> None:
    store = FaultyStore(MemoryStore(), fail=FILES)
    c = Compactor(policy, store, BenchSummarizer())
    given = history(BIG * 3)
    before = snapshot(given)
    with pytest.raises(StoreUnavailable, match="No space left on device") as raised:
        c.prepare(given, "t")
    assert isinstance(raised.value.__cause__, OSError)
    assert snapshot(given) == before
    # The disk is cleared: the same call goes through and compacts.
    store.heal()
    view = c.prepare(given, "t")
    assert check(view) == [] and len(json.dumps(view)) < len(json.dumps(given))


def test_a_fault_on_the_second_write_of_a_pass_leaves_no_edit() -> None:
    """persist saves the blob, then its index line is refused: the blob is orphaned (harmless)
    and the result is not replaced by a preview naming a file nobody indexed."""
    store = FaultyStore(MemoryStore(), fail={"append_file"})
    c = Compactor(Policy.default(context_limit=20_000), store)
    view = c.prepare(history(), "t")
    writes = [name for name in store.calls if name in FILES]
    assert writes == ["save_blob", "append_file"] and store.failed == ["append_file"]
    assert view == history()
    resumed = Compactor(Policy.default(context_limit=20_000), store.inner, session=c.session_id)
    assert resumed.view() == view


@pytest.mark.parametrize("kind", ["memory", "files", "sqlite"])
def test_a_refused_journal_append_keeps_its_records_for_the_next_call(
    tmp_path: Path, kind: str
) -> None:
    inner: Any = {
        "memory": lambda: MemoryStore(),
        "files": lambda: FileStore(tmp_path),
        "sqlite": lambda: SqliteStore(tmp_path / "s.db"),
    }[kind]()
    store = FaultyStore(inner, fail={"append"}, skip=1, times=1)
    policy = Policy.default(context_limit=20_000)
    c = Compactor(policy, store, BenchSummarizer())
    first = c.prepare(history(), "t")
    grown = [*first, call("b"), results(("b", "short"))]
    with pytest.raises(StoreUnavailable, match="journal could not be written"):
        c.prepare(grown, "t")
    # The caller retries the same list once the store works again: nothing is missing.
    view = c.prepare(grown, "t")
    assert view[-1] == results(("b", "short"))
    resumed = Compactor(policy, inner, session=c.session_id)
    assert resumed.view() == view
    assert [r["seq"] for r in inner.records(c.session_id) if r["kind"] == "message"] == [
        0,
        1,
        2,
        3,
        4,
    ]
    if kind == "sqlite":
        inner.close()


@pytest.mark.parametrize("policy", [Policy.default(context_limit=20_000), Policy.seed(echo=False)])
def test_compact_now_with_a_full_disk_is_a_clear_error(policy: Any) -> None:
    store = FaultyStore(MemoryStore(), fail=WRITES)
    c = Compactor(policy, store, BenchSummarizer())
    given = [*history("small"), {"role": "assistant", "content": "done"}, user("next")]
    with pytest.raises(StoreUnavailable, match="could not compact"):
        c.compact_history(given, "next")
    with pytest.raises(StoreUnavailable):
        c.reactive_compact(given, "next")


def test_the_seed_skips_a_stage_whose_copy_is_refused_and_says_so() -> None:
    policy = Policy.seed(echo=False, context_limit=10**9, tool_result_batch_limit=10_000)
    store = FaultyStore(MemoryStore(), fail={"save_tool_result"})
    c = Compactor(policy, store)
    given = history()
    assert c.prepare(given, "t") == given
    (note,) = store_errors(c)
    assert note.startswith("tool_result_budget skipped")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_store_directory_keeps_everything_in_view(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    c = Compactor(Policy.default(context_limit=4_000), store)
    first = c.prepare([user("t")], "t")
    tmp_path.chmod(0o555)
    for sub in tmp_path.rglob("*"):
        if sub.is_dir():
            sub.chmod(0o555)
    try:
        with pytest.raises(StoreUnavailable):
            c.prepare([*first, call("a"), results(("a", BIG * 3))], "t")
    finally:
        for sub in [tmp_path, *tmp_path.rglob("*")]:
            if sub.is_dir():
                sub.chmod(0o755)


def persisted_path(view: list[dict[str, Any]]) -> str:
    text = view[-1]["content"][0]["content"]
    return str(text.split("Full output: ")[1].split("\n")[0])


def test_recall_rebuilds_a_deleted_copy_from_the_session_log(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    c = Compactor(Policy.default(context_limit=20_000), store)
    path = persisted_path(c.prepare(history(), "t"))
    Path(path).unlink()
    page = recall(store, str(c.session_id), path, limit=len(BIG) + 1_000)
    assert "file missing; rebuilt from this session's log" in page.text
    assert BIG in page.text


def test_recall_rebuilds_a_deleted_archive_from_the_session_log(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    c = Compactor(Policy.default(context_limit=20_000), store, BenchSummarizer())
    said = [{"role": "assistant", "content": "the lexer is wrong"}, user("and?")]
    view = c.compact_history(
        [user("fix the parser"), *said, {"role": "assistant", "content": "fixed"}, user("go")],
        "go",
    )
    archive = next(e.paths[0] for e in c.events if e.stage == "compact_history")
    Path(archive).unlink()
    page = recall(store, str(c.session_id), archive)
    assert "the lexer is wrong" in page.text
    assert check(view) == []


def test_recall_of_a_deleted_file_the_log_cannot_rebuild_says_so(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    c = Compactor(Policy.default(context_limit=20_000), store)
    c.prepare(history(), "t")
    index = store.append_file(f"sessions/{c.session_id}.index.md", "")
    Path(index).unlink()
    with pytest.raises(FileNotFoundError, match="deleted outside context-compact"):
        recall(store, str(c.session_id), index)


def test_a_sqlite_store_exports_a_deleted_copy_again(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    c = Compactor(Policy.default(context_limit=20_000), store)
    path = persisted_path(c.prepare(history(), "t"))
    Path(path).unlink()
    assert store.read_text(path) == BIG
    assert Path(path).read_text(encoding="utf-8") == BIG
    store.close()


DAMAGE = [
    CorruptStore("sessions.db: database disk image is malformed"),
    LinkRefused("/tmp/store/blobs", "a symbolic link at a folder"),
]


SEED = Policy.seed(echo=False, context_limit=10**9, tool_result_batch_limit=10_000)


@pytest.mark.parametrize("policy", [Policy.default(context_limit=20_000), SEED])
@pytest.mark.parametrize("error", DAMAGE, ids=["corrupt store", "planted link"])
def test_a_damaged_store_or_a_planted_link_is_raised_as_itself_not_skipped_as_a_refused_write(
    policy: Any, error: OSError
) -> None:
    # Both are OSErrors, as a full disk is; neither is a refused write to retry after freeing
    # space: the caller sees them as they are (and nothing left the view).
    store = FaultyStore(MemoryStore(), fail=FILES, error=error)
    c = Compactor(policy, store, BenchSummarizer())
    given = history()
    before = snapshot(given)
    with pytest.raises(type(error)) as raised:
        c.prepare(given, "t")
    assert not isinstance(raised.value, StoreUnavailable)
    assert snapshot(given) == before and store_errors(c) == []


@pytest.mark.parametrize("error", DAMAGE, ids=["corrupt store", "planted link"])
def test_a_journal_append_into_a_damaged_store_raises_the_damage_not_store_unavailable(
    error: OSError,
) -> None:
    store = FaultyStore(MemoryStore(), fail={"append"}, error=error)
    c = Compactor(Policy.default(context_limit=20_000), store)
    with pytest.raises(type(error)) as raised:
        c.prepare([user("t")], "t")
    assert not isinstance(raised.value, StoreUnavailable)


def test_a_faulty_store_has_the_optional_capabilities_of_the_store_it_wraps(
    tmp_path: Path,
) -> None:
    # Bound on the instance: Python 3.12's isinstance on a protocol never asks __getattr__.
    sqlite = FaultyStore(SqliteStore(tmp_path / "s.db"))
    memory = FaultyStore(MemoryStore())
    try:
        for capability in (BatchesTurns, DeletesSessions, KnowsWriters, OnDatabaseFile):
            assert isinstance(sqlite, capability) and not isinstance(memory, capability)
        assert inspect.getattr_static(sqlite, "turn") == sqlite.inner.turn
    finally:
        sqlite.close()
