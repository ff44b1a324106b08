"""What the engine may know of a store's encodings: texts as bytes, records as JSON, the paths.

Every backend writes what the engine hands it the same way, and the engine relies on these
forms and nothing else of a backend (``session/`` imports from the store only this module and
``base.py``):

* **Texts as bytes**: UTF-8 with lone surrogates passed through (``encode``, ``decode``), so
  every ``str`` comes back exactly, also tool output that was not UTF-8. A content address is
  the ``sha256`` hex of those bytes.
* **Records as JSON**: a record is a dict with a string ``"kind"`` (``Record``), stored as
  strict ASCII JSON (``dumps``: ``ensure_ascii``, no spaces), so lone surrogates survive as
  escapes. An ``Encoded`` record brings its own text, made only when a store asks.
* **Messages as JSONL** (transcripts, archives): one ``sizing.to_json`` line per message
  (``jsonl``); ``EncodedMessages`` carries contents whose JSON is already made.
* **The paths**: the layout of the files a store issues, relative to its root (the seed's
  S-1.3 and S-2.4 for its files, plus our own)::

    .task_outputs/tool-results/<safe id>.txt         seed: one per tool_use id, never rewritten
    .task_outputs/tool-results/sha256-<32 hex>.txt   save_blob, save_pack: content-addressed
    .task_outputs/media/sha256-<32 hex>.<ext>        save_media: an image or PDF, its bytes
    .transcripts/transcript_<token>.jsonl            seed: a new one per snip or summary
    .transcripts/archive_<32 hex>.jsonl              save_messages: content-addressed
    .transcripts/<name>                              append_file: grows, its path fixed by name

  so the same text always gets the same path in every store (``blob_rel``), and a media path
  names the digest of its bytes (``media_digest``).
* **The searchable text of a message** (``message_text``): text blocks, tool inputs
  (``[tool_use NAME {json}]``), tool results (``[tool_result ID]`` and their text), any other
  block as JSON, in order: what ``recall`` shows and a search looks in (``text.py``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from ..media import extension
from ..messages import Message, block_type, blocks, plain_role, readable_text
from ..sizing import to_json

Record = dict[str, Any]
"""A journal record: a JSON object with a string ``"kind"`` (the engine defines the kinds)."""

Meta = dict[str, object]
"""A session's meta as a store keeps it: a JSON object, what ``create_session`` was given
plus ``id`` and ``created``. The stores treat it as data; ``store.meta.SessionMeta`` reads
its keys, each checked for its type."""


# -- texts as bytes -----------------------------------------------------------------------------
def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- records as JSON ----------------------------------------------------------------------------
_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))


def dumps(value: object) -> str:
    """``json.dumps(value, ensure_ascii=True, separators=(",", ":"))``."""
    return _ENCODER.encode(value)


class Encoded(dict[str, Any]):
    """A record that can make its own JSON text (``json()``: None when it cannot), made only
    when a store asks. The maker vouches that it is ASCII JSON of exactly this dict's value,
    keys in order; the separators may differ from ``dumps``'s, the value may not.
    ``dumps_records`` uses it instead of encoding the record again."""

    maker: Callable[[], str | None] | None = None

    def json(self) -> str | None:
        return self.maker() if self.maker is not None else None


def dumps_records(records: Sequence[Record]) -> str:
    """``dumps(records)``, or the same value with each ``Encoded`` record's own text."""
    if not any(isinstance(r, Encoded) for r in records):
        return dumps(records)
    parts = []
    for record in records:
        made = record.json() if isinstance(record, Encoded) else None
        parts.append(made if made is not None else dumps(record))
    return f"[{','.join(parts)}]"


# -- messages as JSONL --------------------------------------------------------------------------
class EncodedMessages(list[Message]):
    """Messages with the JSON of some of their contents already made (``lines[i]``: the
    ``to_json`` of ``self[i]["content"]``, or None): ``jsonl`` writes the same bytes as for
    a plain list without encoding those contents again. The caller vouches for the texts."""

    def __init__(self, messages: list[Message], contents: list[str | None]) -> None:
        super().__init__(messages)
        self.contents = contents


def _line(message: Message, content: str | None) -> str:
    # to_json of {"role": r, "content": c} is exactly this when c's JSON is already made.
    role = plain_role(message) if content is not None else None
    if role is not None:
        return f'{{"role": {to_json(role)}, "content": {content}}}'
    return to_json(message)


def jsonl(messages: list[Message]) -> str:
    # to_json, not strict JSON: the seed's transcripts stringify what JSON cannot hold.
    if isinstance(messages, EncodedMessages):
        return "".join(_line(m, t) + "\n" for m, t in zip(messages, messages.contents, strict=True))
    return "".join(to_json(m) + "\n" for m in messages)


# -- the paths ----------------------------------------------------------------------------------
RESULTS = ".task_outputs/tool-results"
MEDIA = ".task_outputs/media"
TRANSCRIPTS = ".transcripts"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_NAME = re.compile(r"[A-Za-z0-9._/-]+")
# Every relative path a store issues matches this; anything else is not ours without a lookup.
ISSUABLE = re.compile(r"\.(task_outputs|transcripts)/[A-Za-z0-9._/-]+")


def issuable(rel: str) -> bool:
    """Whether ``rel`` (relative to root, POSIX form) has the form of a path a store issues."""
    return ISSUABLE.fullmatch(rel) is not None


def safe_id(tool_use_id: object) -> str:
    """S-1.3: characters outside ``[A-Za-z0-9._-]`` become ``_``, cut to 120."""
    return _UNSAFE.sub("_", str(tool_use_id))[:120]


def tool_result_rel(tool_use_id: str) -> str:
    return f"{RESULTS}/{safe_id(tool_use_id)}.txt"


def blob_rel(digest: str) -> str:
    return f"{RESULTS}/sha256-{digest[:32]}.txt"


def media_rel(digest: str, media_type: str) -> str:
    return f"{MEDIA}/sha256-{digest[:32]}.{extension(media_type)}"


def is_media(rel: str) -> bool:
    return rel.startswith(MEDIA + "/")


def media_digest(path: str) -> str | None:
    """The start of the sha256 of the bytes a media path the store issued names (its file
    name, ``media_rel``); None for any other path."""
    if f"/{MEDIA}/" not in path:
        return None
    return path.rsplit("/sha256-", 1)[-1].split(".", 1)[0]


def transcript_rel(token: str) -> str:
    return f"{TRANSCRIPTS}/transcript_{token}.jsonl"


def archive_rel(digest: str) -> str:
    return f"{TRANSCRIPTS}/archive_{digest[:32]}.jsonl"


def append_rel(name: str) -> str:
    """The path of ``append_file(name)``; ``ValueError`` naming ``name`` unless it is safe."""
    parts = name.split("/") if isinstance(name, str) else []
    if (
        not isinstance(name, str)
        or not _NAME.fullmatch(name)
        or any(part in ("", ".", "..") for part in parts)
        or (parts[0] == "sessions" and name.endswith((".jsonl", ".meta.json", ".head", ".lock")))
    ):
        # The second rule keeps FileStore's journals (sessions/<id>.jsonl) out of reach.
        raise ValueError(
            f"not a safe relative file name: {name!r} (characters [A-Za-z0-9._/-], "
            "no '..', '.', empty or leading '/' part, not a journal, witness or lock file "
            "under 'sessions/')"
        )
    return f"{TRANSCRIPTS}/{name}"


# -- the searchable text of a message -----------------------------------------------------------
def message_text(message: Any) -> str:
    """Everything readable in a message: text, tool inputs, tool results, in order."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = []
    for block in blocks(message):
        kind = block_type(block)
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "tool_use":
            parts.append(f"[tool_use {block.get('name')} {to_json(block.get('input'))}]")
        elif kind == "tool_result":
            text = readable_text(block)
            shown = text if text is not None else to_json(block.get("content"))
            parts.append(f"[tool_result {block.get('tool_use_id')}]\n{shown}")
        else:
            parts.append(to_json(block))
    return "\n".join(parts)


__all__ = [
    "MEDIA",
    "RESULTS",
    "TRANSCRIPTS",
    "Encoded",
    "EncodedMessages",
    "Meta",
    "Record",
    "append_rel",
    "archive_rel",
    "blob_rel",
    "decode",
    "dumps",
    "dumps_records",
    "encode",
    "is_media",
    "issuable",
    "jsonl",
    "media_digest",
    "media_rel",
    "message_text",
    "safe_id",
    "sha256",
    "tool_result_rel",
    "transcript_rel",
]
