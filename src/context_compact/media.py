"""Images and documents as the API counts them, never as base64 text.

An image block costs tokens by its pixels, not by its base64 length (a 1 MB screenshot is
~1.3 MB of base64, which a text count would call 300k+ tokens). Anthropic's vision guide
("Evaluate image size", docs.anthropic.com/en/docs/build-with-claude/vision, read 2025-11):

* ``tokens = (width px * height px) / 750``;
* an image whose long edge is over 1568 px, or that would cost over ~1,600 tokens, is first
  scaled down (aspect ratio kept) until it fits both, so no image costs more than ~1,600.

The pixel size is read from the header of the base64 data (PNG, GIF, JPEG, WebP), decoding
only the first bytes; an image we cannot measure (a URL, a file id, an unknown format) is
counted at the cap. A PDF document is counted by its pages: Anthropic's PDF guide says a page
costs 1,500-3,000 tokens of text plus the page as an image; we count 3,000 a page, the safe
side. A text document counts as its text.

``without_media(content)`` gives the content with every base64 payload taken out and the
tokens those payloads stand for; the rest is sized as text by the caller.

When an image or document leaves the view it is also saved as a file of its own (decoded
bytes, named by the extension of its media type: ``EXTENSIONS``), so a person or a tool can
open it; ``describe`` gives the one-line description that names it, read off the bytes.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
from typing import Any

MAX_EDGE = 1568
MAX_IMAGE_TOKENS = 1_600
PIXELS_PER_TOKEN = 750
PDF_PAGE_TOKENS = 3_000
_HEAD = 65_536  # decoded bytes read for a JPEG's size marker; PNG, GIF and WebP need 30
_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


def _head(data: str, size: int) -> bytes:
    chunk = data[: (size * 4 // 3 + 3) // 4 * 4]
    try:
        return base64.b64decode(chunk + "=" * (-len(chunk) % 4), validate=False)
    except (binascii.Error, ValueError):
        return b""


def _jpeg_size(head: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(head):
        if head[i] != 0xFF:
            i += 1
            continue
        marker = head[i + 1]
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE):
            height, width = struct.unpack(">HH", head[i + 5 : i + 9])
            return width, height
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        i += 2 + struct.unpack(">H", head[i + 2 : i + 4])[0]
    return None


def image_size(data: str) -> tuple[int, int] | None:
    """Width and height in pixels of base64 image data, or None when not recognized."""
    head = _head(data, 32)
    if head[:2] == b"\xff\xd8":
        return _jpeg_size(_head(data, _HEAD))
    return pixel_size(head)


def pixel_size(head: bytes) -> tuple[int, int] | None:
    """Width and height in pixels of an image file's first bytes (PNG, GIF, WebP: 30 bytes;
    JPEG: up to its size marker), or None when not recognized."""
    if head.startswith(b"\x89PNG\r\n\x1a\n") and len(head) >= 24:
        width, height = struct.unpack(">II", head[16:24])
        return width, height
    if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        width, height = struct.unpack("<HH", head[6:10])
        return width, height
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP" and len(head) >= 30:
        kind = head[12:16]
        if kind == b"VP8X":
            return 1 + int.from_bytes(head[24:27], "little"), 1 + int.from_bytes(
                head[27:30], "little"
            )
        if kind == b"VP8 ":
            width, height = struct.unpack("<HH", head[26:30])
            return width & 0x3FFF, height & 0x3FFF
        if kind == b"VP8L":
            bits = int.from_bytes(head[21:25], "little")
            return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if head[:2] == b"\xff\xd8":
        return _jpeg_size(head)
    return None


def pixel_tokens(width: int, height: int) -> int:
    """Tokens of an image of this size after the API's downscaling."""
    if width <= 0 or height <= 0:
        return MAX_IMAGE_TOKENS
    scale = min(1.0, MAX_EDGE / max(width, height))
    scale = min(scale, (MAX_IMAGE_TOKENS * PIXELS_PER_TOKEN / (width * height)) ** 0.5)
    return max(1, round(float(width * scale * height * scale / PIXELS_PER_TOKEN)))


def image_tokens(block: dict[str, Any]) -> int:
    source = block.get("source")
    if isinstance(source, dict) and source.get("type") == "base64":
        size = image_size(str(source.get("data", "")))
        if size is not None:
            return pixel_tokens(*size)
    return MAX_IMAGE_TOKENS


def pdf_pages(data: str) -> int:
    try:
        raw = base64.b64decode(data + "=" * (-len(data) % 4), validate=False)
    except (binascii.Error, ValueError):
        return 1
    return max(1, len(_PAGE.findall(raw)))


def _media(block: Any) -> tuple[Any, int]:
    if not isinstance(block, dict):
        return block, 0
    kind = block.get("type")
    source = block.get("source")
    if kind == "image":
        return {k: v for k, v in block.items() if k != "source"}, image_tokens(block)
    if kind == "document" and isinstance(source, dict) and source.get("type") == "base64":
        pages = pdf_pages(str(source.get("data", "")))
        return {k: v for k, v in block.items() if k != "source"}, pages * PDF_PAGE_TOKENS
    if kind == "tool_result" and isinstance(block.get("content"), list):
        inner, tokens = without_media(block["content"])
        return ({**block, "content": inner}, tokens) if tokens else (block, 0)
    return block, 0


def without_media(content: Any) -> tuple[Any, int]:
    """``content`` without its images' and PDFs' payloads, and the tokens they cost; the same
    object (and 0) when it holds none."""
    if not isinstance(content, list):
        return content, 0
    out: list[Any] | None = None
    total = 0
    for i, block in enumerate(content):
        stripped, tokens = _media(block)
        if stripped is not block:
            if out is None:
                out = list(content)
            out[i] = stripped
            total += tokens
    return (content, 0) if out is None else (out, total)


# -- media as files ---------------------------------------------------------------------
EXTENSIONS = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "application/pdf": "pdf",
}
"""The file extension of each media type the API accepts; any other type is saved as .bin."""


def extension(media_type: Any) -> str:
    return EXTENSIONS.get(str(media_type).lower(), "bin")


def decoded(data: Any) -> bytes | None:
    """The bytes of base64 ``data``, or None when it is not valid base64."""
    if not isinstance(data, str):
        return None
    try:
        return base64.b64decode(data + "=" * (-len(data) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def sniff(data: bytes) -> str | None:
    """The media type a file's first bytes show (the types of ``EXTENSIONS``), or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data[:2] == b"\xff\xd8":
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data.startswith(b"%PDF-"):
        return "application/pdf"
    return None


def describe(data: bytes, media_type: str | None = None) -> str:
    """``image/png, 800x600, 12,345 bytes`` (pixels for an image, pages for a PDF), read
    off the bytes; the media type given is used when the bytes do not show one."""
    kind = sniff(data) or media_type or "application/octet-stream"
    parts = [kind]
    if kind.startswith("image/"):
        size = pixel_size(data[:_HEAD])
        if size is not None:
            parts.append(f"{size[0]}x{size[1]}")
    elif kind == "application/pdf":
        pages = len(_PAGE.findall(data))
        parts.append(f"{max(1, pages)} page{'s' if pages > 1 else ''}")
    parts.append(f"{len(data):,} bytes")
    return ", ".join(parts)


__all__ = [
    "EXTENSIONS",
    "decoded",
    "describe",
    "extension",
    "image_size",
    "image_tokens",
    "pixel_size",
    "pixel_tokens",
    "sniff",
    "without_media",
]
