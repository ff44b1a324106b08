"""One durable session per conversation: a ``Compactor`` per key, made on first use.

A compactor is one session: one log, one view, one recall index. A framework that serves
many conversations through one agent (LangChain's ``thread_id``, the Agents SDK's session
id) needs one compactor per conversation, or the conversations mix in one log.
``Conversations`` is that map:

    conversations = Conversations(Policy.default(model=MODEL), PostgresStore(URL))
    compactor = conversations.get("thread-42")

Invariants:

* A key always names the same session id (``session_id(key)``), so a conversation continues
  on any worker of a shared store, after any restart: the session is created on first use and
  resumed after. A ``str`` key names ``<prefix>-<key>`` when that is a valid id, else
  ``<prefix>-`` and the first 32 hex digits of the sha256 of its UTF-8; any other key
  (``int``, ``bool``, ``float``, ``bytes``, ``UUID``, a tuple of these, a subclass of one:
  ``key_identity``) is hashed with its type's name.
* Two keys that differ by value or by type never name one session (a conversation is a
  tenant): ``7``, ``7.0``, ``True`` and ``"7"`` are four conversations. A key that has the form
  of a hash (32 hex digits, either case) is hashed itself, so no key's plain id is another
  key's hashed one; a non-``str`` key is hashed from bytes that start with 0xFF, which no
  string's UTF-8 holds, so only a sha256 collision could make two hashed ids equal.
* ``get`` refuses ``None`` and ``""`` (``ConfigError``, naming the argument): every request
  without a conversation would share one session. A key of another type (a list, an object
  whose text may hold its address) is refused too: its session id could not be the same on
  every worker.
* At most ``max_open`` compactors are kept in memory (least recently used beyond that are
  dropped: everything they hold is in the store, and the next ``get`` resumes it).
* ``get`` is thread-safe; one compactor still runs one call at a time.

An adapter given one ``Compactor`` instead (``CompactionMiddleware(compactor)``,
``CompactingSession(inner, compactor)``, ``CompactionCapability(compactor)``) asks
``compactor_for(compactor, key)`` for each conversation: the first key it sees is the
compactor's own session, and every other key gets a compactor of the same settings
(``Compactor.sibling``) on a session of its own, named ``<first session id>-<key>`` (as
``Conversations`` names its own), so two conversations never share one log. Routing rather
than refusing: the settings are cloned whole (the policy is data; store, summarizer, token
counter and hooks are shared objects, as ``Conversations`` shares them), so a second
conversation behaves as the first. Only the first key is the given compactor's, in this
process: a process that resumes it (``session=ID``) must send the same conversation first;
``Conversations`` names every session by its key and has no such order. Routing takes
``None`` (a run the framework names no conversation for) and ``""`` as keys of their own,
and tells keys apart as ``Conversations`` does (by ``key_identity``, never by ``==``:
``1 == True``).
"""

from __future__ import annotations

import hashlib
import re
import threading
import uuid
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Any

from ..compactor import Compactor
from ..errors import ConfigError
from ..store import SessionExists, Store
from ..store.journal import shown_id, valid_session_id

_HASH_FORM = re.compile(r"[0-9a-fA-F]{32}")
"""What a hashed key looks like after the prefix: a key of this form is hashed too (either
case: a FileStore on a case-insensitive file system would take one for the other)."""

_TYPED = b"\xff"
"""The first byte of a non-``str`` key's identity: never in UTF-8 (surrogates included), so
no string's identity is another key's."""


def key_identity(key: object) -> bytes:
    """What tells two conversation keys apart: a ``str``'s own UTF-8 (the bytes its session
    id has always been derived from), any other key's type and value after ``_TYPED``."""
    if type(key) is str:
        return key.encode("utf-8", "surrogatepass")
    return _TYPED + _typed(key)


def _typed(key: object) -> bytes:
    kind = type(key)
    name = f"{kind.__module__}.{kind.__qualname__}".encode("utf-8", "surrogatepass")
    body: bytes
    if key is None:
        body = b""
    elif isinstance(key, bool):  # before int: a bool is an int
        body = b"1" if key else b"0"
    elif isinstance(key, int):
        body = b"%x" % int(key)  # hex: no digit limit
    elif isinstance(key, float):
        body = float.hex(key).encode("ascii")
    elif isinstance(key, str):
        body = str.__str__(key).encode("utf-8", "surrogatepass")
    elif isinstance(key, bytes):
        body = bytes(key)
    elif isinstance(key, uuid.UUID):
        body = key.bytes
    elif isinstance(key, tuple):
        parts = [_typed(item) for item in key]
        body = b"".join(b"%d:%s" % (len(part), part) for part in parts)
    else:
        shown = name.decode("utf-8", "replace")
        raise ConfigError(
            f"conversation key {shown_id(key)} of type {shown}: give a str, int, "
            "bytes, UUID or a tuple of these (its text, str(key), if that names it)"
        )
    return name + b"\x00" + body


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
        if type(key) is str:
            plain = f"{self.prefix}-{key}"
            if valid_session_id(plain) and _HASH_FORM.fullmatch(key) is None:
                return plain
        digest = hashlib.sha256(key_identity(key)).hexdigest()
        return f"{self.prefix}-{digest[:32]}"

    def get(self, key: object) -> Compactor:
        """The compactor of conversation ``key``: its session created now or resumed."""
        if key is None or (isinstance(key, str) and not key):
            raise ConfigError(
                f"Conversations.get: key {key!r} names no conversation (each request without "
                "one would share a session): pass the conversation's id"
            )
        return self._get(key)

    def _get(self, key: object) -> Compactor:
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


class _Siblings(Conversations):
    """The conversations a compactor serves besides its first one, each a sibling of it."""

    def __init__(self, home: Compactor) -> None:
        session = home.session_id
        prefix = session if session is not None and len(session) <= 60 else "conv"
        if session is not None and prefix != session:
            prefix = f"{prefix}-{hashlib.sha256(session.encode()).hexdigest()[:32]}"
        super().__init__(home.policy, home.store, home.summarizer, prefix=prefix)
        self._home = weakref.ref(home)

    def _compactor(self, session: str) -> Compactor:
        home = self._home()
        if home is None:  # pragma: no cover - the caller holds the home compactor
            raise RuntimeError("the compactor this conversation was routed from is gone")
        return home.sibling(session if home.keeps_log else None)


class _Routes:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.first: bytes | None = None  # the first key's ``key_identity``
        self.others: _Siblings | None = None


_routes: weakref.WeakKeyDictionary[Compactor, _Routes] = weakref.WeakKeyDictionary()
_routes_lock = threading.Lock()


def compactor_for(compactor: Compactor, key: object) -> Compactor:
    """The compactor of conversation ``key`` when an adapter was given one ``compactor``:
    itself for the first key it is asked about, a sibling on a session of its own for every
    other key (the same one each time; see the module docstring). ``None`` is a key too:
    a run the framework names no conversation for."""
    with _routes_lock:
        routes = _routes.get(compactor)
        if routes is None:
            routes = _routes[compactor] = _Routes()
    identity = key_identity(key)
    with routes.lock:
        if routes.first is None:
            routes.first = identity
        if routes.first == identity:
            return compactor
        if routes.others is None:
            routes.others = _Siblings(compactor)
        others = routes.others
    return others._get(key)  # None and "" too: a run named by no conversation is one


def taken(
    given: Compactor | Conversations | Store | None,
    policy: Any,
    options: dict[str, Any],
    adapter: str,
    format: str,
) -> tuple[Compactor | None, Conversations | None]:
    """What a framework adapter was given, as the one compactor it uses or the conversations
    it keys by the framework's own ids: a ``Compactor`` or a ``Conversations`` as given (the
    settings are theirs, so none may come beside them), or a store (files under the working
    directory when None) with ``policy=`` and the ``Conversations`` options, in the
    adapter's ``format``."""
    if isinstance(given, Compactor | Conversations) and (options or policy is not None):
        raise TypeError(
            f"{adapter}(compactor) takes no settings: give them to the Compactor "
            "(or the Conversations)"
        )
    if isinstance(given, Compactor):
        return given, None
    if isinstance(given, Conversations):
        return None, given
    if given is None:
        from ..store.files import FileStore

        given = FileStore(Path.cwd())
    from ..policy import Policy

    options.setdefault("format", format)
    summarizer = options.pop("summarizer", None)
    return None, Conversations(policy or Policy.default(), given, summarizer, **options)


__all__ = ["Conversations", "compactor_for", "taken"]
