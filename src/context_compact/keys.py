"""Messages known by content: keys, chain ids, and recognizing the caller's list.

A message's *key* is a hash of its canonical JSON (sorted keys, ASCII escapes, no spaces), so
two equal dicts have the same key whatever object holds them. A logged message's *id* is a
hash of its parent's id and its key: the same content at another place in the conversation
is another message, and one id names a whole prefix of the log (as content-addressed
conversation logs do).

``Recognizer`` is the one place that says which leading items of the caller's list are
already known, and from which list we remember: the list we returned last (the *view*) or
the list we were given last (the *input*). The format edge uses it over the caller's own
items (``formats/edge.py``), the session engine over canonical messages (``Recognizer.match``,
which also knows the log by its chain id). The caller may pass

* the list we returned plus what it appended (the SDK docs' loop, also after
  ``messages[:] = prepare(...)``): its head is the view, item for item;
* its own full history: its head equals the log, which one chain id checks;
* the list it passed last time, again or extended (a retry after a failed model call);
* a copy of any of these (content keys, not object identity, decide).

Anything else is a new conversation. An item is known when it is the remembered item's
object at the same place (a pass of ``is`` checks at C speed), else when their keys are
equal; a key is computed at most once per list and only where the objects differ, and the
keys of objects the last list held at the same place are reused, so recognizing a long list
costs the identity pass plus hashing what is new: O(new) hashing per call. A message object
the caller mutates in place after passing it keeps its old key; replace messages instead
(the SDK idioms all do).
"""

from __future__ import annotations

import hashlib
import json
import operator
from dataclasses import dataclass
from typing import Any, cast

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
    """A list we remember: its items, and their keys, each computed at most once (or given)."""

    __slots__ = ("keys", "objects")

    def __init__(
        self, objects: list[Any] | None = None, keys: list[str | None] | None = None
    ) -> None:
        self.objects: list[Any] = objects if objects is not None else []
        # May run past ``objects`` (a list known by its keys beyond the objects we hold).
        self.keys: list[str | None] = keys if keys is not None else [None] * len(self.objects)

    def __len__(self) -> int:
        return len(self.keys)

    def key(self, i: int) -> str:
        key = self.keys[i]
        if key is None:
            key = self.keys[i] = content_key(self.objects[i])
        return key


@dataclass(frozen=True)
class Match:
    """How the caller's list lines up with ours: ``new`` starts at ``start``."""

    start: int
    via: str  # "view", "input" (the previous call's list again) or "log"


class Recognizer:
    """Which leading items of the caller's list we already know, and from which list we
    remember: ``view`` (the one we returned last) or ``input`` (the one we were given last,
    once ``accept``-ed). ``look`` takes the list, ``prefix`` counts its leading items that are
    a remembered list's, ``match`` decides for the engine (the view, the input, or the log by
    its chain id)."""

    def __init__(self) -> None:
        self.view = Known()
        self.input = Known()
        self.items = Known()  # the list looked at last
        self._seen = self.items  # the view after ``remember_view``, else the list looked at
        self._keyed = True  # every key of ``_seen`` is fixed (given, or ``accept(keyed)``)
        self._taken = 0  # how many leading keys of ``items`` are fixed ones of ``_seen``
        self._chain: list[str] = []  # chain ids of ``items``' prefixes, as far as computed

    def remember_view(self, objects: list[Any], keys: list[str] | None = None) -> None:
        """The list we return (its keys, when already known): the next list may repeat it."""
        given: list[str | None] | None = list(keys) if keys is not None else None
        self.view = self._seen = Known(list(objects), given)
        self._keyed = given is not None
        self._chain = []

    def look(self, items: list[Any]) -> None:
        """Take ``items`` to recognize. Keys of the objects the last list (or the view) held
        at the same place are reused; the rest are hashed when first asked for."""
        seen = self._seen
        same = same_prefix(items, seen.objects)
        del self._chain[same:]
        keys = seen.keys[:same]
        keys += [None] * (len(items) - same)
        self.items = self._seen = Known(list(items), keys)
        self._taken = same if self._keyed else 0
        self._keyed = False

    def key(self, i: int) -> str:
        """The key of item ``i``: a remembered list's own where it holds the same object."""
        items = self.items
        key = items.keys[i]
        if key is None:
            item = items.objects[i]
            for known in (self.view, self.input):
                if i < len(known.objects) and known.objects[i] is item:
                    key = known.key(i)
                    break
            else:
                key = content_key(item)
            items.keys[i] = key
        return key

    def keys(self, start: int = 0) -> list[str]:
        """The keys of the items from ``start`` on."""
        return [self.key(i) for i in range(start, len(self.items))]

    def prefix(self, known: Known) -> int:
        """How many leading items are ``known``'s, item for item: the same objects (checked
        at C speed) or equal keys (hashing starts only where the objects differ)."""
        items, objects = self.items.objects, known.objects
        n = same_prefix(items, objects)
        end = min(len(items), len(known))
        while n < end:
            same = n < len(objects) and items[n] is objects[n]
            if not same and self.key(n) != known.key(n):
                break
            n += 1
        return n

    def repeats(self, known: Known) -> bool:
        """Whether the items start with the whole of ``known``."""
        return self.prefix(known) == len(known)

    def accept(self, keyed: bool = False) -> None:
        """The list looked at is the one we were given: the next call may repeat it (a
        retry after a failed model call, or that list extended). ``keyed`` fixes every key
        now (the engine's log: an object the caller edits in place afterwards is not taken
        for what was logged); the edge's keys stay lazy, hashed only if a copy comes."""
        if keyed:
            keys = self.items.keys
            for i in range(self._taken, len(keys)):
                if keys[i] is None:
                    self.key(i)
            self._keyed = self._seen is self.items
        self.input = self.items

    def refused(self) -> None:
        """The list looked at was refused: none of its keys is reused. A caller may fix an
        item in place and pass the same list again; the keys hashed before the fix are not
        the item's."""
        self.items = self._seen = Known()
        self._keyed = False
        self._taken = 0
        self._chain = []

    def chain_at(self, n: int) -> str:
        """The chain id of the first ``n`` items; prefixes computed on an earlier call of
        the same list are reused."""
        chain = self._chain
        if n <= len(chain):
            return chain[n - 1] if n else ROOT
        parent = chain[-1] if chain else ROOT
        for i in range(len(chain), n):
            parent = chain_id(parent, self.key(i))
            chain.append(parent)
        return parent

    def match(
        self, messages: list[Any], view_keys: list[str], log_len: int, log_head: str
    ) -> Match | None:
        """Where the new messages of ``messages`` start: after the view (``view_keys``, the
        state's own), after the list accepted last, after the log (``log_len`` messages
        whose chain id is ``log_head``); None for a new conversation."""
        last = self.input
        self.look(messages)
        if self.repeats(self._as_view(view_keys)):
            return Match(len(view_keys), "view")
        if len(last) and self.repeats(last):
            return Match(len(last), "input")
        if log_len and len(messages) >= log_len and self.chain_at(log_len) == log_head:
            return Match(log_len, "log")
        return None

    def _as_view(self, keys: list[str]) -> Known:
        # The view as it is now: a call that returned none (``record``) may have changed it
        # since it was remembered; the objects handed out count while their keys still hold.
        view = self.view
        held = len(view.keys)
        objects = view.objects if keys[:held] == view.keys else []
        return Known(objects, cast("list[str | None]", keys))


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
