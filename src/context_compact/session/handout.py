"""The view as handed to the caller: private copies, made again only for what changed.

``view()`` gives the caller copies of the engine's messages, so no object the caller holds is
the engine's (editing the returned view in place changes neither the state nor the next
view). Copying the whole view on every call costs more than the rest of a turn at a large
window, so a copy handed out last time is handed out again while

* the engine's message there is the same object it was copied from, and
* the copy still equals it: neither the caller nor the engine edited either in place since.

Otherwise the message is copied afresh. The usual call (the last view, unchanged, plus what
was appended) costs one identity pass and one ``==`` of the head, both in C; ``==`` skips
the strings both share (strings are immutable, and ``clone`` shares them). Two views returned
one after the other may therefore hold the same message objects (the caller's own, equal to
the engine's); the engine's never.
"""

from __future__ import annotations

from ..keys import same_prefix
from ..messages import Message, clone


class Handout:
    def __init__(self) -> None:
        self._engine: list[Message] = []  # the engine's messages of the last view
        self._copies: list[Message] = []  # the copies handed out for them, place by place

    def copies(self, messages: list[Message]) -> list[Message]:
        """Private copies of ``messages``, reusing last call's copies that still match."""
        engine, handed = self._engine, self._copies
        n = same_prefix(messages, engine)
        if n and handed[:n] != messages[:n]:
            n = 0  # a copy in the head was edited: each is checked on its own below
        # The list of last call's copies is ours (the caller got a copy of it): extended
        # in place when all of it is reused, the usual call.
        out = handed if n == len(handed) else handed[:n]
        if n < len(messages):
            # A compaction moved or replaced messages: find each one's last copy, if any.
            known = {id(m): i for i, m in enumerate(engine[n:], start=n)}
            for message in messages[n:]:
                i = known.get(id(message))
                if i is not None and engine[i] is message and handed[i] == message:
                    out.append(handed[i])
                else:
                    out.append(clone(message))
        self._engine, self._copies = list(messages), out
        return list(out)


__all__ = ["Handout"]
