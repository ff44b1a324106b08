"""Messages known by content: keys, chain ids, and recognizing the caller's history.

A message's *key* is a hash of its canonical JSON (sorted keys, ASCII escapes, no spaces), so
two equal dicts have the same key whatever object holds them. A logged message's *id* is a
hash of its parent's id and its key: the same content at another place in the conversation
is another message, and one id names a whole prefix of the log (as content-addressed
conversation logs do).

``Recognizer.match`` decides which of the caller's messages are new. The caller may pass

* the list ``prepare`` returned plus what it appended (the SDK docs' loop, also after
  ``messages[:] = prepare(...)``): its head equals the view, key by key;
* its own full history: its head equals the log, which one chain id checks;
* the list it passed last time, again or extended (a retry after a failed model call);
* a copy of any of these (keys, not object identity, are compared).

Anything else is a new conversation (``None``). ``Known`` is the same recognition for one
remembered list (the format edge's last view and input, a bench peer's returned view and
log): how many leading items of the caller's list are that list's items, the same objects or
equal content, each remembered item hashed at most once. Keys of objects seen at the same position
in the previous call are reused by identity, so recognizing a long list costs a pass of
``is`` checks plus hashing only what is new: O(new) hashing per call. A message object the
caller mutates in place after passing it keeps its old key; replace messages instead (the
SDK idioms all do).
"""

from __future__ import annotations

import hashlib
import json
import operator
from dataclasses import dataclass
from typing import Any

from .messages import plain

ROOT = ""


def _default(value: Any) -> Any:
    # An SDK object hashes as the dict it is logged as (``messages.plain``).
    dumped = plain(value)
    return str(value) if dumped is value else dumped


_CANONICAL = json.JSONEncoder(
    sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=_default
)


def canonical(message: Any) -> bytes:
    return _CANONICAL.encode(message).encode("ascii")


def content_key(message: Any) -> str:
    return hashlib.blake2b(canonical(message), digest_size=16).hexdigest()


def chain_id(parent: str, key: str) -> str:
    return hashlib.blake2b(f"{parent}/{key}".encode("ascii"), digest_size=16).hexdigest()


def same_prefix(messages: list[Any], objects: list[Any]) -> int:
    """How many leading items are the same objects (the common case, checked at C speed)."""
    n = min(len(messages), len(objects))
    if all(map(operator.is_, messages[:n], objects[:n])):
        return n
    return next(i for i in range(n) if messages[i] is not objects[i])


class Known:
    """A list we remember (one we returned, or were given), its items' keys computed lazily."""

    def __init__(self, objects: list[Any] | None = None) -> None:
        self.objects: list[Any] = objects if objects is not None else []
        self._keys: dict[int, str] = {}

    def key(self, i: int) -> str:
        if i not in self._keys:
            self._keys[i] = content_key(self.objects[i])
        return self._keys[i]

    def prefix(self, items: list[Any]) -> int:
        """How many leading ``items`` are ours, item for item: the same objects or equal
        content (hashing starts only where the objects differ)."""
        objects = self.objects
        n = same_prefix(items, objects)
        while n < min(len(items), len(objects)):
            item = items[n]
            if item is not objects[n] and content_key(item) != self.key(n):
                break
            n += 1
        return n


@dataclass(frozen=True)
class Match:
    """How the caller's list lines up with ours: ``new`` starts at ``start``."""

    start: int
    via: str  # "view", "input" (the previous call's list again) or "log"


class Recognizer:
    """Keys of the caller's last list by position, reused while the objects are the same."""

    def __init__(self) -> None:
        self._objects: list[Any] = []
        self._keys: list[str] = []
        self._chain: list[str] = []
        # The previous call's input: a caller retrying the same list (or that list extended)
        # after the model call failed is recognized without hashing it again.
        self._last_objects: list[Any] = []
        self._last_keys: list[str] = []

    def prime(self, objects: list[Any], keys: list[str]) -> None:
        """Remember keys we already know (the view we return), so the next call reuses them."""
        self._objects = list(objects)
        self._keys = list(keys)
        self._chain = []

    def keys(self, messages: list[Any]) -> list[str]:
        objects, keys = self._objects, self._keys
        same = same_prefix(messages, objects)
        out = keys[:same]
        last_objects, last_keys = self._last_objects, self._last_keys
        for i in range(same, len(messages)):
            message = messages[i]
            if i < len(objects) and objects[i] is message:
                out.append(keys[i])
            elif i < len(last_objects) and last_objects[i] is message:
                out.append(last_keys[i])
            else:
                out.append(content_key(message))
        if same < len(self._chain):
            del self._chain[same:]
        self._objects = list(messages)
        self._keys = out
        return out

    def last_keys(self) -> list[str]:
        """The keys of the list ``match`` was given last."""
        return self._keys

    def accept(self, messages: list[Any]) -> None:
        """``messages`` (just matched) is now wholly logged: recognize it again next time."""
        # keys() just made ``_objects`` a copy of ``messages``; prime() replaces, never edits it.
        self._last_objects, self._last_keys = self._objects, self._keys

    def chain_at(self, keys: list[str], n: int) -> str:
        """The chain id of ``keys[:n]``; prefixes computed on an earlier call are reused."""
        chain = self._chain
        if n <= len(chain):
            return chain[n - 1] if n else ROOT
        parent = chain[-1] if chain else ROOT
        for key in keys[len(chain) : n]:
            parent = chain_id(parent, key)
            chain.append(parent)
        return parent

    def match(
        self, messages: list[Any], view_keys: list[str], log_len: int, log_head: str
    ) -> Match | None:
        last = self._last_keys
        keys = self.keys(messages)
        if len(keys) >= len(view_keys) and keys[: len(view_keys)] == view_keys:
            return Match(len(view_keys), "view")
        if last and len(keys) >= len(last) and keys[: len(last)] == last:
            return Match(len(last), "input")
        if log_len and len(keys) >= log_len and self.chain_at(keys, log_len) == log_head:
            return Match(log_len, "log")
        return None


__all__ = [
    "ROOT",
    "Known",
    "Match",
    "Recognizer",
    "canonical",
    "chain_id",
    "content_key",
    "same_prefix",
]
