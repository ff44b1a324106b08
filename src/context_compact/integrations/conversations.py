"""One durable session per conversation: a ``Compactor`` per key, made on first use.

A compactor is one session: one log, one view, one recall index. A framework that serves
many conversations through one agent (LangChain's ``thread_id``, the Agents SDK's session
id) needs one compactor per conversation, or the conversations mix in one log.
``Conversations`` is that map:

    conversations = Conversations(Policy.default(model=MODEL), PostgresStore(URL))
    compactor = conversations.get("thread-42")

Invariants:

* A key always names the same session id (``session_id(key)``: ``<prefix>-<key>`` when that
  is a valid id, else ``<prefix>-`` and the first 32 hex digits of the key's sha256), so a
  conversation continues on any worker of a shared store, after any restart: the session is
  created on first use and resumed after.
* At most ``max_open`` compactors are kept in memory (least recently used beyond that are
  dropped: everything they hold is in the store, and the next ``get`` resumes it).
* ``get`` is thread-safe; one compactor still runs one call at a time.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any

from ..compactor import Compactor
from ..store import SessionExists, Store
from ..store.journal import valid_session_id


class Conversations:
    """A ``Compactor`` per conversation key, each its own session in ``store``."""

    def __init__(
        self,
        policy: Any,
        store: Store,
        summarizer: Any = None,
        *,
        prefix: str = "conv",
        max_open: int = 256,
        **options: Any,
    ) -> None:
        if not valid_session_id(prefix) or len(prefix) > 60:
            raise ValueError(f"prefix {prefix!r} is not the start of a valid session id")
        self.policy = policy
        self.store = store
        self.summarizer = summarizer
        self.prefix = prefix
        self.max_open = max(1, max_open)
        self.options = options
        self._open: OrderedDict[str, Compactor] = OrderedDict()
        self._lock = threading.Lock()

    def session_id(self, key: object) -> str:
        """The session id of conversation ``key`` (the same on every worker)."""
        text = str(key)
        plain = f"{self.prefix}-{text}"
        if valid_session_id(plain):
            return plain
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        return f"{self.prefix}-{digest[:32]}"

    def get(self, key: object) -> Compactor:
        """The compactor of conversation ``key``: its session created now or resumed."""
        session = self.session_id(key)
        with self._lock:
            found = self._open.get(session)
            if found is not None:
                self._open.move_to_end(session)
                return found
            try:  # a session that does not exist yet is created under that id
                compactor = self._compactor(session)
            except SessionExists:  # by another worker, just now: resume it
                compactor = self._compactor(session)
            self._open[session] = compactor
            while len(self._open) > self.max_open:
                self._open.popitem(last=False)
            return compactor

    def _compactor(self, session: str) -> Compactor:
        return Compactor(self.policy, self.store, self.summarizer, session=session, **self.options)

    def __len__(self) -> int:
        return len(self._open)


__all__ = ["Conversations"]
