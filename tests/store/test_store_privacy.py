"""Issue 18: the store writes only under its root, never through a symbolic link it did not
create, and keeps its files to their owner (0600 files, 0700 folders) unless told otherwise."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from context_compact import Compactor, Policy
from context_compact.session.recall import recall
from context_compact.store import FileStore, SqliteStore
from histories import call, results, user


def open_store(kind: str, root: Path, private: bool = True) -> Any:
    if kind == "files":
        return FileStore(root, private=private)
    return SqliteStore(root / ".context-compact" / "sessions.db", root=root, private=private)


def compacted(store: Any) -> Compactor:
    c = Compactor(Policy.default(context_limit=4_000), store)
    big = "line of output\n" * 3_000
    c.prepare([user("t"), call("a"), results(("a", big))], "t")
    return c


def modes(root: Path) -> dict[str, int]:
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            found[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return found


@pytest.mark.parametrize("kind", ["files", "sqlite"])
def test_every_file_the_store_writes_is_private_to_its_owner(tmp_path: Path, kind: str) -> None:
    old = os.umask(0o022)
    try:
        store = open_store(kind, tmp_path)
        compacted(store)
        store.close()
    finally:
        os.umask(old)
    found = modes(tmp_path)
    assert len(found) > 5
    wrong = {
        path: oct(mode)
        for path, mode in found.items()
        if mode != (0o700 if (tmp_path / path).is_dir() else 0o600)
    }
    assert wrong == {}


def test_a_store_told_to_share_follows_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        compacted(FileStore(tmp_path, private=False))
    finally:
        os.umask(old)
    assert set(modes(tmp_path).values()) == {0o755, 0o644}


@pytest.mark.parametrize("kind", ["files", "sqlite"])
def test_a_stored_copy_swapped_for_a_symlink_is_not_read_by_recall(
    tmp_path: Path, kind: str
) -> None:
    root = tmp_path / "work"
    secret = tmp_path / "secret.txt"
    secret.write_text("the secret outside the work directory")
    store = open_store(kind, root)
    c = compacted(store)
    sid = c.session_id
    assert sid is not None
    copy = next((root / ".task_outputs" / "tool-results").iterdir())
    copy.unlink()
    copy.symlink_to(secret)
    with pytest.raises(PermissionError, match="symbolic link the store did not create"):
        store.read_text(str(copy))
    with pytest.raises(PermissionError, match="symbolic link"):
        recall(store, sid, str(copy))
    store.close()


@pytest.mark.parametrize("kind", ["files", "sqlite"])
def test_the_session_index_is_never_appended_through_a_planted_symlink(
    tmp_path: Path, kind: str
) -> None:
    root = tmp_path / "work"
    outside = tmp_path / "outside"
    outside.mkdir()
    store = open_store(kind, root)
    (root / ".transcripts").mkdir(parents=True, exist_ok=True)
    (root / ".transcripts" / "sessions").symlink_to(outside, target_is_directory=True)
    with pytest.raises(OSError):
        store.append_file("sessions/s.index.md", "- a line\n")
    (root / ".transcripts" / "sessions").unlink()
    (root / ".transcripts" / "sessions").mkdir()
    planted = root / ".transcripts" / "sessions" / "t.index.md"
    planted.symlink_to(outside / "planted.md")
    try:  # refused (FileStore), or the link replaced by the store's own file (SqliteStore)
        store.append_file("sessions/t.index.md", "- a line\n")
    except PermissionError:
        assert planted.is_symlink()
    else:
        assert not planted.is_symlink() and planted.read_text() == "- a line\n"
    assert list(outside.iterdir()) == []
    store.close()
