"""Long strings of a JSON value moved out to content-addressed blobs, and back.

``externalize`` replaces every string of ``MIN_CHARS`` characters or more (so at least 1 KiB
of UTF-8) with a placeholder ``{"$blob": "<sha256 hex of its UTF-8>"}`` and hands the bytes to
a sink; ``restore`` puts the strings back. A tool result that appears in a message, again in
an edit, and again in ``save_blob`` is so stored once.

The placeholder must never be confused with data. A dict whose only key is ``"$blob"`` or
``"$esc"`` is therefore escaped as ``{"$esc": <the dict, its values externalized>}``, and
``restore`` reads a one-key ``"$esc"`` dict as "this dict, literally" (its values restored,
the dict itself not taken for a placeholder). Every other value is left as it is. Law:
``restore(externalize(v, sink), sink.get) == v`` for every JSON value ``v`` (a property test
checks it on adversarial dicts).

Bytes are UTF-8 with lone surrogates passed through, so no string is refused or altered.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

MIN_CHARS = 1024
BLOB = "$blob"
ESCAPE = "$esc"
_RESERVED = (BLOB, ESCAPE)


def externalize(value: Any, sink: dict[str, bytes], min_chars: int = MIN_CHARS) -> Any:
    """``value`` with its long strings replaced by placeholders; their bytes added to ``sink``."""
    if isinstance(value, str):
        if len(value) < min_chars:
            return value
        data = value.encode("utf-8", "surrogatepass")
        digest = hashlib.sha256(data).hexdigest()
        sink[digest] = data
        return {BLOB: digest}
    if isinstance(value, list):
        return [externalize(item, sink, min_chars) for item in value]
    if isinstance(value, dict):
        out = {key: externalize(item, sink, min_chars) for key, item in value.items()}
        if len(out) == 1 and next(iter(out)) in _RESERVED:
            return {ESCAPE: out}
        return out
    return value


def restore(value: Any, lookup: Callable[[str], bytes]) -> Any:
    """The inverse of ``externalize``; ``lookup(hash)`` gives a blob's bytes."""
    if isinstance(value, list):
        return [restore(item, lookup) for item in value]
    if isinstance(value, dict):
        if len(value) == 1:
            key, inner = next(iter(value.items()))
            if key == BLOB:
                return lookup(inner).decode("utf-8", "surrogatepass")
            if key == ESCAPE:
                return {k: restore(v, lookup) for k, v in inner.items()}
        return {key: restore(item, lookup) for key, item in value.items()}
    return value


def references(value: Any, found: set[str]) -> set[str]:
    """Add to ``found`` the hash of every placeholder in an externalized ``value``."""
    if isinstance(value, list):
        for item in value:
            references(item, found)
    elif isinstance(value, dict):
        if len(value) == 1:
            key, inner = next(iter(value.items()))
            if key == BLOB:
                found.add(inner)
                return found
            if key == ESCAPE:
                value = inner
        for item in value.values():
            references(item, found)
    return found
