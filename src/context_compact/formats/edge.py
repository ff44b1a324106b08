"""The Compactor's edge for a non-canonical format: the caller's list in, canonical to the
engine, the view back in the caller's format.

``Edge.load(items)`` splits off the leading system items (copied as given, returned first as
copies of their own, never given to the engine) and converts the rest. Its ``keys.Recognizer``
remembers two lists it has the canonical form of: the list it returned last (the view, message
by message) and the list it was given last. A caller's list that starts with either, item for
item (the same objects, or equal content), reuses those canonical messages and converts only
what follows, so

* the SDK docs' loop (append to the returned list, pass it back) hands the engine exactly its
  view plus the new messages: the session goes on, even where a conversion is not its own
  inverse, and the work per call is O(new items);
* a caller that keeps its own list gets the same canonical messages as a whole conversion
  (the last unit is converted again: a run of tool calls may have grown), which the engine
  recognizes by its log.

A call crosses the edge in three steps: ``Edge.load`` in, the engine's call inside
``crossing`` (a refusal said in the caller's items), ``dumped`` out.

``dump(view)`` converts each canonical message once while it stays in the view (a message the
engine did not touch is the same object call after call). ``translate`` turns an
``InvalidHistory`` about canonical messages into one naming the caller's items.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace

from ..invariants import InvalidHistory, check
from ..keys import Known, Recognizer
from ..messages import Message, copy_json, plain
from .base import Converter, ItemDict, as_item, text_of


@dataclass
class _Units:
    """The canonical messages of a list of caller items the recognizer remembers, unit by
    unit."""

    ends: list[int] = field(default_factory=list)  # end of each unit in the items
    messages: list[Message] = field(default_factory=list)

    def whole(self, same: int) -> tuple[int, int]:
        """``(items, units)`` of the first ``same`` items that are whole units."""
        units = bisect.bisect_right(self.ends, same)
        return (self.ends[units - 1] if units else 0), units


class Edge:
    def __init__(self, converter: Converter) -> None:
        self.converter = converter
        self.system: list[ItemDict] = []
        self.system_text = ""
        self.loaded = False  # a list came in (else the system items are the session's)
        # The view and the last input, recognized in the caller's items; their conversions.
        self._known = Recognizer()
        self._view = _Units()
        self._input = _Units()
        self._dumped: dict[int, tuple[Message, list[ItemDict]]] = {}
        self._last: tuple[int, list[int]] = (0, [])  # for translate: system count, unit ends

    def load(self, items: object) -> list[Message]:
        if not isinstance(items, list):
            raise InvalidHistory(check(items))
        head = 0
        while head < len(items):
            item = as_item(items[head], head, "a message")
            if not self.converter.is_system(item):
                break
            head += 1
        # Private copies, as of this call: a caller editing its items (or the view's) in
        # place changes neither what was sent nor what the next view starts with.
        self.restore(copy_json([plain(s) for s in items[:head]]))
        self.loaded = True
        body = items[head:]
        self._known.look(body)
        try:
            return self._converted(head, body)
        except BaseException:
            self.refused()
            raise

    def restore(self, system: list[ItemDict]) -> None:
        """The leading system items to return first: the list's, or a resumed session's."""
        self.system = system
        self.system_text = "\n\n".join(text_of(plain(s).get("content")) for s in system)

    def _converted(self, head: int, body: list[object]) -> list[Message]:
        """The canonical messages of ``body`` (after ``head`` system items), reusing the
        conversions of the items it repeats."""
        try:
            memo, done, units = self._reused()
        except (RecursionError, ValueError):
            # An item the JSON encoder cannot hash (nested too deep, an int too long to
            # write): convert the whole list, and the engine's check names the item.
            memo, done, units = self._view, 0, 0
        tail = [as_item(v, head + done + i, "an item") for i, v in enumerate(body[done:])]
        new = self.converter.units(tail, head + done)
        messages = memo.messages[:units] + [u.message for u in new]
        ends = memo.ends[:units]
        for unit in new:
            ends.append((ends[-1] if ends else 0) + unit.count)
        self._known.accept()
        self._input = _Units(ends, messages)
        self._last = (head, ends)
        return messages

    def refused(self) -> None:
        """The list given last was refused (here or by the engine): neither its keys nor its
        conversions are reused. A caller may fix an item in place and pass it again."""
        self._known.refused()
        self._known.input = Known()
        self._input = _Units()

    def _reused(self) -> tuple[_Units, int, int]:
        """The conversions whose items the list looked at repeats, and how many items and
        units it repeats."""
        known = self._known
        done, units = self._view.whole(known.prefix(known.view))
        memo = self._view
        if units < len(self._view.ends):
            # Not the whole view: the caller's own list, or the list it passed last time.
            done_in, units_in = self._input.whole(known.prefix(known.input))
            units_in = max(0, units_in - 1)
            done_in = self._input.ends[units_in - 1] if units_in else 0
            if done_in > done:
                memo, done, units = self._input, done_in, units_in
        return memo, done, units

    def dump(self, view: list[Message]) -> list[ItemDict]:
        out = copy_json(self.system)
        objects: list[ItemDict] = []
        ends: list[int] = []
        cache: dict[int, tuple[Message, list[ItemDict]]] = {}
        for message in view:
            hit = self._dumped.get(id(message))
            items = hit[1] if hit is not None and hit[0] is message else None
            if items is None:
                items = self.converter.dump_message(message)
            cache[id(message)] = (message, items)
            objects.extend(items)
            ends.append(len(objects))
        self._dumped = cache
        # The caller's items are copies: the memo's converted items (and the engine's
        # messages they came from) stay out of the caller's reach.
        copies = copy_json(objects)
        self._known.remember_view(copies)
        self._view = _Units(ends, list(view))
        out.extend(copies)
        return out

    def translate(self, error: InvalidHistory) -> InvalidHistory:
        """``error`` with each canonical message index turned into the caller's item index."""
        head, ends = self._last
        fixed = []
        for v in error.violations:
            if 0 <= v.index < len(ends):
                start = head + (ends[v.index - 1] if v.index else 0)
                detail = f"{v.detail} (in the message converted from items {start}-"
                detail += f"{head + ends[v.index] - 1})"
                fixed.append(replace(v, index=start, detail=detail))
            else:
                fixed.append(v)
        return InvalidHistory(fixed) if fixed else error


@contextmanager
def crossing(edge: Edge | None, lent: Callable[[], AbstractContextManager[None]]) -> Iterator[None]:
    """The engine's call on what came in through ``edge`` (None: a canonical list, as
    given): the engine lends its messages, which ``dump`` copies, and an ``InvalidHistory``
    names the caller's items."""
    if edge is None:
        yield
        return
    try:
        with lent():
            yield
    except InvalidHistory as error:
        edge.refused()
        raise edge.translate(error) from None


def dumped(edge: Edge | None, view: list[Message] | None) -> list[Message] | list[ItemDict]:
    """The engine's ``view`` for the caller: in its format through ``edge``, as it is for a
    canonical list; nothing for a call that returns none."""
    if view is None:
        return []
    return view if edge is None else edge.dump(view)


__all__ = ["Edge", "crossing", "dumped"]
