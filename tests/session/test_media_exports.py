"""Images and documents that leave the view through a summary are saved as files of their own."""

from __future__ import annotations

import base64
import re
import struct
from pathlib import Path
from typing import Any

import pytest

from context_compact import Compactor, MemoryStore, Policy
from context_compact.store import FileStore, SqliteStore, Store
from context_compact.testing.faulty import FaultyStore
from histories import call, user


def png(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + bytes(range(256)) * 8


def image(data: bytes, media_type: str = "image/png") -> dict[str, Any]:
    b64 = base64.b64encode(data).decode("ascii")
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": b64}}


PDF = b"%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n2 0 obj << /Type /Page >> endobj\n%%EOF\n"
SHOT = png(800, 600)


def shot_result(tool_id: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": "the screenshot"}, image(SHOT)]
    if extra is not None:
        parts.append(extra)
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": parts}],
    }


def long_session(media: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A task whose first tool results hold media, then enough turns to summarize them."""
    messages: list[dict[str, Any]] = [user("fix the layout bug")]
    messages += [call("shot"), shot_result("shot")]
    for i, block in enumerate(media):
        content = [{"type": "text", "text": f"attachment {i}"}, block]
        result = {"type": "tool_result", "tool_use_id": f"m{i}", "content": content}
        messages += [call(f"m{i}"), {"role": "user", "content": [result]}]
    for i in range(40):
        messages += [
            call(f"t{i}"),
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"{i} " * 600}
                ],
            },
        ]
    return messages


def summarize(store: Store, media: list[dict[str, Any]]) -> tuple[Compactor, list[Any]]:
    """Prepare the session's messages one by one; the view just after the first summary."""
    c = Compactor(Policy.default(context_limit=8_000), store)
    view: list[Any] = []
    for message in long_session(media):
        view = c.prepare([*view, message], "fix the layout bug")
        if any(e.stage == "summarize" for e in c.events):
            return c, view
    raise AssertionError("the session was never summarized")


def summary_of(view: list[Any]) -> str:
    texts = [m["content"] for m in view if isinstance(m.get("content"), str)]
    found = [t for t in texts if "Conversation summary" in t]
    assert found, "no summary in the view"
    return found[0]


@pytest.mark.parametrize("kind", ["memory", "files", "sqlite"])
def test_an_image_in_a_summarized_result_is_saved_as_a_png_the_summary_names(
    kind: str, tmp_path: Path
) -> None:
    store: Store = {
        "memory": lambda: MemoryStore(),
        "files": lambda: FileStore(tmp_path),
        "sqlite": lambda: SqliteStore(tmp_path / "s.db", root=tmp_path),
    }[kind]()
    try:
        _, view = summarize(store, [image(png(40, 30))])
        text = summary_of(view)
        assert base64.b64encode(SHOT).decode("ascii") not in str(view)
        paths = [w.rstrip(";") for w in text.split() if w.endswith((".png", ".png;"))]
        assert len(paths) == 2
        assert sorted(store.read_bytes(p) for p in paths) == sorted([SHOT, png(40, 30)])
        assert "message 2 (tool result shot), image: image/png, 800x600" in text
        if kind != "memory":
            assert {Path(p).read_bytes() for p in paths} == {SHOT, png(40, 30)}
    finally:
        store.close()


def test_the_index_lists_every_exported_image_and_document() -> None:
    store = MemoryStore()
    _, view = summarize(
        store,
        [
            {
                "type": "document",
                "source": {
                    "type": "base64",
                    "media_type": "application/pdf",
                    "data": base64.b64encode(PDF).decode(),
                },
            }
        ],
    )
    index = next(p for p in store.files if p.endswith(".index.md"))
    lines = store.files[index].splitlines()
    images = [line for line in lines if line.startswith("- image: ")]
    documents = [line for line in lines if line.startswith("- document: ")]
    assert len(images) == 1 and images[0].split()[2].endswith(".png")
    assert len(documents) == 1 and "application/pdf, 2 pages" in documents[0]
    pdf = documents[0].split()[2]
    assert pdf.endswith(".pdf") and store.read_bytes(pdf) == PDF
    assert index in summary_of(view)


def test_a_url_image_gets_no_file_and_the_summary_names_its_url() -> None:
    url = "https://example.com/screens/bug.png"
    store = MemoryStore()
    _, view = summarize(store, [{"type": "image", "source": {"type": "url", "url": url}}])
    text = summary_of(view)
    assert url in text
    assert len(store.media) == 1  # the tool result's screenshot only


def test_a_text_document_is_saved_as_text() -> None:
    doc = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "notes\nline two"},
    }
    store = MemoryStore()
    _, view = summarize(store, [doc])
    text = summary_of(view)
    found = re.search(r"document: text, 14 chars at (\S+?)[;\n]", text)
    assert found is not None
    assert store.read_text(found.group(1)) == "notes\nline two"


def test_undecodable_base64_stays_in_the_archive_and_the_summary_says_so() -> None:
    bad = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "not base64!!"},
    }
    store = MemoryStore()
    _, view = summarize(store, [bad])
    text = summary_of(view)
    assert "base64 not decodable" in text
    archive = next(p for p in store.files if "/archive_" in p and "not base64!!" in store.files[p])
    assert archive in text


def test_a_refused_media_write_skips_the_summary_and_keeps_the_image_in_view() -> None:
    store = FaultyStore(MemoryStore(), fail={"save_media"}, times=1)
    c = Compactor(Policy.default(context_limit=8_000), store)
    view: list[Any] = []
    errors = []
    for message in long_session([]):
        view = c.prepare([*view, message], "fix the layout bug")
        if any(e.stage == "store_error" for e in c.events) and not errors:
            errors = [e for e in c.events if e.stage == "store_error"]
            assert base64.b64encode(SHOT).decode("ascii") in str(view)
            assert not any("Conversation summary" in str(m.get("content")) for m in view)
    assert store.failed == ["save_media"]
    assert errors and "summarize skipped" in errors[0].note
    # The store healed (times=1): the next summary saved it.
    assert base64.b64encode(SHOT).decode("ascii") not in str(view)
    assert list(store.inner.media.values()) == [SHOT]  # type: ignore[attr-defined]
