"""Images and PDFs are sized as the API counts them (pixels, pages), never as base64 text."""

from __future__ import annotations

import base64
import struct
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_compact.media import (
    MAX_IMAGE_TOKENS,
    image_size,
    pixel_tokens,
    without_media,
)
from context_compact.sizing import TokenCounter, text_tokens, to_json

PAD = b"\0" * 40_000  # pixel data a real file would carry: it must not be counted as text


def png(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + b"\0" * 4 + PAD


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\0" * 3 + PAD


def jpeg(width: int, height: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\0" + b"\x01\x01\0\0\x01\0\x01\0\0"
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\0" * 9
    return b"\xff\xd8" + app0 + sof + PAD


def webp(width: int, height: int) -> bytes:
    body = b"VP8X" + struct.pack("<I", 10) + b"\0" * 4
    body += (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", len(body) + 4) + b"WEBP" + body + PAD


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@pytest.mark.parametrize("make", [png, gif, jpeg, webp], ids=["png", "gif", "jpeg", "webp"])
def test_the_pixel_size_is_read_from_the_header_of_each_format(make: Any) -> None:
    assert image_size(b64(make(1024, 768))) == (1024, 768)


def test_an_image_costs_its_pixels_over_750_as_anthropic_documents() -> None:
    assert pixel_tokens(1000, 1000) == round(1_000_000 / 750)
    assert pixel_tokens(200, 200) == round(40_000 / 750)


@given(st.integers(1, 20_000), st.integers(1, 20_000))
def test_no_image_costs_more_than_the_cap_after_downscaling(width: int, height: int) -> None:
    assert 1 <= pixel_tokens(width, height) <= MAX_IMAGE_TOKENS


def image_message(data: str, nested: bool = False) -> dict[str, Any]:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    if nested:
        block = {"type": "tool_result", "tool_use_id": "a", "content": [image]}
        return {"role": "user", "content": [block]}
    return {"role": "user", "content": [{"type": "text", "text": "what is this?"}, image]}


@pytest.mark.parametrize("nested", [False, True], ids=["in a request", "in a tool result"])
def test_a_message_with_a_screenshot_is_sized_by_pixels_not_base64(nested: bool) -> None:
    message = image_message(b64(png(800, 600)), nested)
    counted = TokenCounter().count(message)
    as_text = text_tokens(to_json(message["content"]))
    assert pixel_tokens(800, 600) < counted < pixel_tokens(800, 600) + 60
    assert as_text > 10 * counted


def test_an_image_we_cannot_measure_counts_at_the_cap() -> None:
    url = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    _, tokens = without_media([url])
    assert tokens == MAX_IMAGE_TOKENS
    _, tokens = without_media([image_message(b64(b"not an image" * 100))["content"][1]])
    assert tokens == MAX_IMAGE_TOKENS


def test_a_pdf_counts_by_its_pages() -> None:
    pdf = b"%PDF-1.4\n" + b"1 0 obj << /Type /Pages /Count 3 >>\n"
    pdf += b"".join(b"%d 0 obj << /Type /Page >>\n" % i for i in range(2, 5)) + PAD
    doc = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf"}}
    doc["source"]["data"] = b64(pdf)
    stripped, tokens = without_media([doc])
    assert tokens == 3 * 3_000
    assert "data" not in to_json(stripped)


def test_content_without_media_is_returned_as_the_same_object() -> None:
    content = [{"type": "text", "text": "plain"}]
    assert without_media(content) == (content, 0) and without_media(content)[0] is content
