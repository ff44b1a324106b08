"""The view as handed to the caller: private copies, made again only for what changed.

``view()`` gives the caller copies of the engine's messages, so no object the caller holds is
the engine's (editing the returned view in place changes neither the state nor the next
view). Copying the whole view on every call costs more than the rest of a turn at a large
window, so a copy handed out last time is handed out again while

* the engine's message there is the same object it was copied from, and
* the copy still equals it: neither the caller nor the engine edited either in place since
  (``==`` is one pass in C that skips the strings both share: strings are immutable, and
  ``clone`` shares them).

Otherwise the message is copied afresh. Two views returned one after the other may therefore
hold the same message objects (the caller's own, equal to the engine's); the engine's never.
"""

from __future__ import annotations

from ..messages import Message, clone


class Handout:
    def __init__(self) -> None:
        # id(engine message) -> (that message, the copy handed out for it last time)
        self._given: dict[int, tuple[Message, Message]] = {}

    def copies(self, messages: list[Message]) -> list[Message]:
        """Private copies of ``messages``, reusing last call's copies that still match."""
        given = self._given
        now: dict[int, tuple[Message, Message]] = {}
        out: list[Message] = []
        for message in messages:
            hit = given.get(id(message))
            if hit is not None and hit[0] is message and hit[1] == message:
                copy_ = hit[1]
            else:
                copy_ = clone(message)
            now[id(message)] = (message, copy_)
            out.append(copy_)
        self._given = now
        return out


__all__ = ["Handout"]
