"""The view as sent, kept in step with every change: messages, their keys and token counts.

``messages[i]`` is what the caller receives at position ``i``; ``keys[i]`` its content key
(how the next call's list is recognized); ``tokens[i]`` its estimated size, ``total`` their
sum; ``texts[i]`` the JSON of its content the count was made on, or None
(``TokenCounter.sized``), which the archive of a summary reuses; ``use_ids`` the tool_use
ids in view (new messages may not reuse one). Changing one message costs one count, never a
recount of the view.

A message pushed ``shared`` is the log's own object, not yet a copy: ``owned()`` copies those
still in view before the view goes out, so a long history passed at once copies only what
stays (a cold start summarizes the rest away), and the caller never holds an object of the
log.
"""

from __future__ import annotations

from ..keys import content_key
from ..messages import Message, blocks, clone, is_tool_use
from ..sizing import TokenCounter


class Shown:
    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.clear()

    def clear(self) -> None:
        self.messages: list[Message] = []
        self.keys: list[str] = []
        self.tokens: list[int] = []
        self.texts: list[str | None] = []
        self.shared: set[int] = set()
        self.total = 0
        self.use_ids: set[str] = set()

    def __len__(self) -> int:
        return len(self.messages)

    def push(self, message: Message, key: str | None = None, shared: bool = False) -> None:
        tokens, text = self.counter.sized(message)
        if shared:
            self.shared.add(len(self.messages))
        self.messages.append(message)
        self.keys.append(key or content_key(message))
        self.tokens.append(tokens)
        self.texts.append(text)
        self.total += tokens

    def set(self, index: int, message: Message) -> None:
        tokens, text = self.counter.sized(message)
        self.total += tokens - self.tokens[index]
        self.shared.discard(index)
        self.messages[index] = message
        self.keys[index] = content_key(message)
        self.tokens[index] = tokens
        self.texts[index] = text

    def owned(self) -> list[Message]:
        """The view, every message in it a private copy (see the module docstring)."""
        for index in self.shared:
            self.messages[index] = clone(self.messages[index])
        self.shared.clear()
        return self.messages

    def reprefix(self, prefix: list[Message], drop: int) -> None:
        """The view with its first ``drop`` entries replaced by ``prefix`` (counted): the rest
        stays as it is, its counts and keys too (a summary changes only what comes before its
        cut)."""
        messages, keys = self.messages[drop:], self.keys[drop:]
        tokens, texts = self.tokens[drop:], self.texts[drop:]
        shared = [i - drop for i in self.shared if i >= drop]
        self.clear()
        for message in prefix:
            self.push(message)
        offset = len(self.messages)
        self.messages += messages
        self.keys += keys
        self.tokens += tokens
        self.texts += texts
        self.shared = {offset + i for i in shared}
        self.total = sum(self.tokens)
        self._find_use_ids()

    def refill(self, messages: list[Message]) -> None:
        self.clear()
        for message in messages:
            self.push(message)
        self._find_use_ids()

    def _find_use_ids(self) -> None:
        self.use_ids = {b["id"] for m in self.messages for b in blocks(m) if is_tool_use(b)}


__all__ = ["Shown"]
