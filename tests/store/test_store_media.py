"""Media files: an image's or PDF's bytes saved as a file of its own, the same in every store."""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from context_compact.store import FileStore, MemoryStore, SqliteStore, Store
from context_compact.testing.faulty import FILES, WRITES, FaultyStore


def png(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + bytes(range(256))


@pytest.mark.parametrize(
    ("media_type", "ext"),
    [
        ("image/png", "png"),
        ("image/jpeg", "jpg"),
        ("image/gif", "gif"),
        ("image/webp", "webp"),
        ("application/pdf", "pdf"),
        ("image/x-unknown", "bin"),
    ],
)
def test_a_media_file_is_content_addressed_and_named_by_its_media_type(
    store: Store, media_type: str, ext: str
) -> None:
    data = png(800, 600)
    path = store.save_media(data, media_type)
    assert path.startswith(f"{store.root}/.task_outputs/media/sha256-")
    assert path.endswith(f".{ext}")
    assert store.save_media(data, media_type) == path
    assert store.save_media(data + b"x", media_type) != path
    assert store.issued(path)
    assert store.read_bytes(path) == data
    if not isinstance(store, MemoryStore):
        assert Path(path).read_bytes() == data


def test_reading_a_media_file_as_text_is_refused_naming_it(store: Store) -> None:
    path = store.save_media(png(2, 2), "image/png")
    with pytest.raises(ValueError, match="binary media file"):
        store.read_text(path)


def test_read_bytes_of_a_text_file_is_its_utf8(store: Store) -> None:
    path = store.save_blob("café \ud800")
    assert store.read_bytes(path) == "café \ud800".encode("utf-8", "surrogatepass")


def test_a_media_file_is_issued_after_a_restart(kind: str, opened: Callable[[str], Store]) -> None:
    if kind == "memory":
        pytest.skip("a MemoryStore does not survive its process")
    path = opened(kind).save_media(png(3, 4), "image/png")
    again = opened(kind)
    assert again.issued(path)
    assert again.read_bytes(path) == png(3, 4)


def test_a_deleted_media_file_comes_back_from_the_sqlite_database(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db", root=tmp_path)
    try:
        path = store.save_media(png(5, 5), "image/png")
        Path(path).unlink()
        assert store.read_bytes(path) == png(5, 5)
        assert Path(path).read_bytes() == png(5, 5)
    finally:
        store.close()


def test_a_deleted_media_file_in_a_file_store_is_a_clear_file_not_found(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    path = store.save_media(png(5, 5), "image/png")
    Path(path).unlink()
    with pytest.raises(FileNotFoundError):
        store.read_bytes(path)


def test_the_faulty_store_refuses_media_writes_as_file_writes() -> None:
    assert "save_media" in WRITES and "save_media" in FILES
    inner = MemoryStore()
    store = FaultyStore(inner, fail={"save_media"})
    with pytest.raises(OSError):
        store.save_media(b"\x89PNG", "image/png")
    assert store.failed == ["save_media"]
    assert inner.media == {}


def test_media_bytes_are_not_base64_text(store: Store) -> None:
    data = png(10, 10)
    path = store.save_media(data, "image/png")
    assert store.read_bytes(path) != base64.b64encode(data)
