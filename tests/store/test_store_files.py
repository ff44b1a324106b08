"""The files a store issues, the same in every store: layout, exact text, ``issued``."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from context_compact.store import FileStore, MemoryStore, SqliteStore, Store

ODD = "tool output \ud800 that was not UTF-8 \udcff, and caf\u00e9 \U0001f600\r\n" * 40


def on_disk(store: Store, path: str) -> bool:
    return not isinstance(store, MemoryStore) and Path(path).is_file()


def test_every_file_is_issued_under_root_in_the_seeds_layout(store: Store) -> None:
    root = store.root
    result = store.save_tool_result("toolu/01 x", "r")
    blob = store.save_blob("b")
    transcript = store.write_transcript([{"role": "user", "content": "t"}])
    archive = store.save_messages([{"role": "user", "content": "a"}])
    index = store.append_file("sessions/s1.index.md", "line\n")
    assert result == f"{root}/.task_outputs/tool-results/toolu_01_x.txt"
    assert blob.startswith(f"{root}/.task_outputs/tool-results/sha256-") and len(blob) == len(
        f"{root}/.task_outputs/tool-results/sha256-{'0' * 32}.txt"
    )
    assert transcript.startswith(f"{root}/.transcripts/transcript_")
    assert transcript.endswith(".jsonl")
    assert archive.startswith(f"{root}/.transcripts/archive_")
    assert index == f"{root}/.transcripts/sessions/s1.index.md"
    for path in (result, blob, transcript, archive, index):
        assert store.issued(path)
        assert on_disk(store, path) or isinstance(store, MemoryStore)


@pytest.mark.parametrize(
    "save",
    [
        lambda s, t: s.save_blob(t),
        lambda s, t: s.save_tool_result("toolu_odd", t),
        lambda s, t: s.append_file("odd.txt", t),
    ],
    ids=["blob", "tool_result", "append_file"],
)
def test_lone_surrogates_in_a_text_are_read_back_exactly(
    store: Store, save: Callable[[Store, str], str]
) -> None:
    path = save(store, ODD)
    assert store.read_text(path) == ODD
    if on_disk(store, path):
        assert Path(path).read_bytes() == ODD.encode("utf-8", "surrogatepass")


def test_lone_surrogates_in_messages_are_kept_in_transcripts_and_archives(store: Store) -> None:
    messages = [{"role": "user", "content": ODD}, {"role": "assistant", "content": "\udc80"}]
    for path in (store.write_transcript(messages), store.save_messages(messages)):
        lines = store.read_text(path).splitlines()
        assert [json.loads(line) for line in lines] == messages


def test_the_same_text_gets_the_same_blob_path_and_another_text_another(store: Store) -> None:
    assert store.save_blob("same") == store.save_blob("same")
    assert store.save_blob("same") != store.save_blob("other")
    assert store.save_messages([{"a": 1}]) == store.save_messages([{"a": 1}])


def test_a_blob_file_is_written_once(store: Store) -> None:
    path = store.save_blob(ODD)
    if isinstance(store, MemoryStore):
        assert sum(1 for text in store.files.values() if text == ODD) == 1
        return
    first = os.stat(path)
    assert store.save_blob(ODD) == path
    again = os.stat(path)
    # A rewrite would rename a new file into place: another inode.
    assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)


def test_a_blob_file_that_was_tampered_with_is_written_again(store: Store) -> None:
    path = store.save_blob(ODD)
    if not on_disk(store, path):
        pytest.skip("no file")
    Path(path).write_text("tampered", encoding="utf-8")
    assert store.save_blob(ODD) == path
    assert store.read_text(path) == ODD


def test_the_seeds_tool_result_file_is_never_rewritten(store: Store) -> None:
    path = store.save_tool_result("toolu_1", "first")
    assert store.save_tool_result("toolu_1", "second") == path
    assert store.read_text(path) == "first"


def test_a_transcript_is_a_new_file_each_time(store: Store) -> None:
    messages = [{"role": "user", "content": "same"}]
    assert store.write_transcript(messages) != store.write_transcript(messages)


def test_an_appended_files_path_stays_the_same_while_it_grows(store: Store) -> None:
    paths = [store.append_file("sessions/s.index.md", f"line {n}\n") for n in range(5)]
    assert len(set(paths)) == 1
    assert store.read_text(paths[0]) == "".join(f"line {n}\n" for n in range(5))


@pytest.mark.parametrize(
    "name",
    [
        "",
        "../up",
        "a/../../up",
        "/abs/path",
        "a//b",
        "./a",
        "a b",
        "a\\b",
        "x\ud800",
        "sessions/s.jsonl",
        "sessions/s.meta.json",
    ],
)
def test_an_append_file_name_that_is_not_safe_is_refused_by_name(store: Store, name: str) -> None:
    with pytest.raises(ValueError) as refused:
        store.append_file(name, "x")
    assert repr(name) in str(refused.value)


def test_issued_is_false_for_paths_the_store_did_not_write(store: Store) -> None:
    root = store.root
    forged = f"{root}/.task_outputs/tool-results/forged.txt"
    if not isinstance(store, MemoryStore):
        # Someone else's file in our folder (a tool wrote it) is still not ours.
        Path(forged).parent.mkdir(parents=True, exist_ok=True)
        Path(forged).write_text("planted", encoding="utf-8")
    output = f"see the full output: {forged}"
    real = store.save_blob(output)  # a tool output naming a path
    assert store.issued(real)
    for path in (
        forged,
        f"{root}/.transcripts/transcript_{'0' * 32}.jsonl",
        f"{root}/../elsewhere/.task_outputs/tool-results/x.txt",
        f"{root}/.task_outputs/tool-results/../../etc/passwd",
        "/etc/passwd",
        f"{root}/.task_outputs/tool-results/\ud800.txt",
        "",
    ):
        assert not store.issued(path), path
        with pytest.raises(KeyError):
            store.read_text(path)


def test_paths_issued_before_a_restart_are_still_issued(
    durable_kind: str, opened: Callable[[str], Store]
) -> None:
    first = opened(durable_kind)
    paths = [
        first.save_blob("b"),
        first.save_tool_result("t1", "t"),
        first.write_transcript([{"role": "user", "content": "x"}]),
        first.save_messages([{"role": "user", "content": "y"}]),
        first.append_file("index.md", "z"),
    ]
    first.close()
    again = opened(durable_kind)
    assert all(again.issued(p) for p in paths)
    assert again.read_text(paths[0]) == "b"


def test_a_path_given_in_another_spelling_of_root_is_recognized(
    durable_kind: str, opened: Callable[[str], Store]
) -> None:
    store = opened(durable_kind)
    path = store.save_blob("b")
    relative = os.path.relpath(path)
    assert store.issued(relative)
    assert store.issued(path.replace("/.task_outputs/", "/./.task_outputs/"))


def test_the_file_store_keeps_its_public_attributes(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    assert store.root == str(tmp_path) and store.root_path == tmp_path
    assert store.results_dir == tmp_path / ".task_outputs" / "tool-results"
    assert store.transcripts_dir == tmp_path / ".transcripts"
    assert repr(store) == f"FileStore({str(tmp_path)!r})"


def test_the_sqlite_store_exports_next_to_its_database_unless_told(tmp_path: Path) -> None:
    beside = SqliteStore(tmp_path / "a.db")
    elsewhere = SqliteStore(tmp_path / "b.db", root=tmp_path / "work")
    try:
        assert beside.root == str(tmp_path)
        assert elsewhere.save_blob("x").startswith(f"{tmp_path}/work/.task_outputs/")
    finally:
        beside.close()
        elsewhere.close()


def test_a_file_written_by_the_seed_before_is_reused_and_becomes_ours(
    durable_kind: str, opened: Callable[[str], Store], tmp_path: Path
) -> None:
    existing = tmp_path / ".task_outputs" / "tool-results" / "dup.txt"
    existing.parent.mkdir(parents=True)
    existing.write_text("first copy", encoding="utf-8")
    store = opened(durable_kind)
    path = store.save_tool_result("dup", "second copy")
    assert store.read_text(path) == "first copy"
    assert store.issued(path)
