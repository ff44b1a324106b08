"""Reading an agent log from disk within limits: its size, its lines, its encoding.

A file over ``Limits.file_bytes`` or a line over ``Limits.line_bytes`` is refused
(``TooLarge``), a long line never held whole; bytes that are not text in the encoding are
refused (``Undecodable``, naming where they are), never replaced.
"""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import TooLarge, Undecodable

MAX_LINE_BYTES = 64 << 20
MAX_FILE_BYTES = 1 << 30


@dataclass(frozen=True)
class Limits:
    """How a loader reads a file. How much before it refuses it (``TooLarge``): one line of a
    JSON Lines file, and one file; a longer line is never held whole in memory: reading stops
    at ``line_bytes`` + 1. And ``encoding``, the text encoding of its bytes: UTF-8 unless the
    caller knows better. Bytes that are not text in it are refused (``Undecodable``), never
    replaced: a log whose accents all became U+FFFD would import as if nothing were lost.
    The encoding must write ASCII as ASCII (latin-1, cp1252, ...: not UTF-16), since lines
    and JSON are found by their ASCII bytes."""

    line_bytes: int = MAX_LINE_BYTES
    file_bytes: int = MAX_FILE_BYTES
    encoding: str = "utf-8"

    def __post_init__(self) -> None:
        try:
            codecs.lookup(self.encoding)
        except LookupError:
            raise ValueError(f"unknown text encoding {self.encoding!r}") from None
        try:
            ascii_as_ascii = b'\n{}[]":,'.decode(self.encoding) == '\n{}[]":,'
        except (UnicodeDecodeError, LookupError):  # LookupError: a str-to-str codec (rot13)
            ascii_as_ascii = False
        if not ascii_as_ascii:
            raise ValueError(
                f"encoding {self.encoding!r} does not write ASCII as ASCII: the loaders read "
                "ASCII-compatible encodings only (utf-8, latin-1, cp1252, ...)"
            )


def decode(raw: bytes, path: Path, encoding: str, line: int = 1, offset: int = 0) -> str:
    """``raw`` as text, strictly; ``line`` and ``offset`` are where ``raw`` starts in the
    file, so a refusal names the bad byte's place in the file."""
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as error:
        bad = raw[error.start : error.end]
        problem = f"{' '.join(f'0x{b:02x}' for b in bad[:4])}: {error.reason}"
        at = line + raw.count(b"\n", 0, error.start)
        raise Undecodable(path, offset + error.start, at, problem, encoding) from None


def read_text(path: Path, limits: Limits) -> str:
    """A whole file as text in ``limits.encoding`` (``Undecodable`` otherwise)."""
    return decode(path.read_bytes(), path, limits.encoding)


def check_size(path: Path, limits: Limits) -> None:
    size = path.stat().st_size
    if size > limits.file_bytes:
        raise TooLarge(
            f"{path}: {size:,} bytes, over the limit of {limits.file_bytes:,} per file "
            "(raise it with --max-file-bytes)"
        )


def read_jsonl(path: Path, limits: Limits | None = None) -> tuple[list[Any], int]:
    """The parsed lines of a JSON Lines file and the number of lines that did not parse."""
    limits = limits or Limits()
    check_size(path, limits)
    records: list[Any] = []
    bad = 0
    offset = 0
    with path.open("rb") as handle:
        for number, raw in enumerate(iter(lambda: handle.readline(limits.line_bytes + 1), b""), 1):
            if len(raw) > limits.line_bytes:
                raise TooLarge(
                    f"{path}: line {number} is over the limit of {limits.line_bytes:,} bytes "
                    "per line (raise it with --max-line-bytes)"
                )
            line = decode(raw, path, limits.encoding, number, offset)
            offset += len(raw)
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                bad += 1
    return records, bad
