"""The view as handed to the caller: private copies, made again only for what changed.

``view()`` gives the caller copies of the engine's messages, so no object the caller holds is
the engine's (editing the returned view in place changes neither the state nor the next
view). Copying the whole view on every call costs more than the rest of a turn at a large
window, so a copy handed out last time is handed out again while

* the engine's message there is the same object it was copied from, and
* the copy still equals it exactly: neither the caller nor the engine edited either in place
  since. Exactly, not as ``==`` says: ``True == 1 == 1.0`` and two dicts in another key order
  are equal in Python but are other bytes in a request, so both are compared as ``marshal``
  writes them (types, values and key order; a value it cannot write is never the same).

Otherwise the message is copied afresh. The usual call (the last view, unchanged, plus what
was appended) costs one identity pass and one exact comparison of the head, both in C. Two
views returned one after the other may therefore hold the same message objects (the caller's
own, equal to the engine's); the engine's never.
"""

from __future__ import annotations

import marshal
from typing import Any

from ..keys import same_prefix
from ..messages import Message, clone


def exactly(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are the same JSON values, types and key order included."""
    try:
        return marshal.dumps(a) == marshal.dumps(b)
    except ValueError:  # an object marshal cannot write: a caller's, never the same
        return False


class Handout:
    def __init__(self) -> None:
        self._engine: list[Message] = []  # the engine's messages of the last view
        self._copies: list[Message] = []  # the copies handed out for them, place by place

    def copies(self, messages: list[Message]) -> list[Message]:
        """Private copies of ``messages``, reusing last call's copies that still match."""
        engine, handed = self._engine, self._copies
        n = same_prefix(messages, engine)
        if n and not exactly(handed[:n], messages[:n]):
            n = 0  # a copy in the head was edited: each is checked on its own below
        # The list of last call's copies is ours (the caller got a copy of it): extended
        # in place when all of it is reused, the usual call.
        out = handed if n == len(handed) else handed[:n]
        if n < len(messages):
            # A compaction moved or replaced messages: find each one's last copy, if any.
            known = {id(m): i for i, m in enumerate(engine[n:], start=n)}
            for message in messages[n:]:
                i = known.get(id(message))
                if i is not None and engine[i] is message and exactly(handed[i], message):
                    out.append(handed[i])
                else:
                    out.append(clone(message))
        self._engine, self._copies = list(messages), out
        return list(out)


__all__ = ["Handout"]
