"""The Engine protocol: what every compaction policy implements, and what it is given.

``Compactor`` forwards every call to one engine, without branching on which one. An engine
is built by the registry (``registry.py``) from a policy object and an ``Env``; the same
registry serves ``--policy`` in the CLI, the bench and library users, so any policy the bench
prices can also run in a real loop.

The five operations mean the same thing under every engine:

* ``prepare(messages, request)``: the request to send now. Never modifies ``messages``.
* ``compact(messages, request, instructions)``: compact now, whatever the size (the
  ``compact`` tool, ``/compact [focus]``).
* ``reactive(messages, request)``: the API refused the previous request as too long;
  return a smaller one.
* ``observe(prompt_tokens)``: the API's count of the request returned last (calibration).
* ``overhead(tokens)``: tokens the request carries besides the messages (system prompt,
  tool schemas), counted into every budget.

Every engine also gives ``limit`` (the most tokens a request may take now; 0 when the
engine leaves it to its policy), ``request_parts(system, tools)`` (the request's fixed parts,
for a summarizer that continues the agent's cached prefix), ``record(messages)`` (log without
compacting; an engine without a log only validates) and ``undo()``, and says whether it keeps
a durable log: ``session`` is its ``DurableSession`` (the session engine's ``Session``), or
None. The durable session names itself (``sid()``, created on first use), shows the request
as it stands (``view()``, what a resumed process sends next), searches the whole log
(``recall``), rebuilds a file it issued (``recover``) and measures its view (``measure``).
``Compactor`` asks ``engine.session is not None``; an engine without one is never made to
fake one. ``StatelessEngine`` gives the engines that keep no state (the seed, the bench's
peers) ``observe``/``overhead`` (remembered only), ``compact``/``reactive`` falling back to
``prepare``, no session and no undo.

A policy is anything ``PolicyLike``: it names its engine and unit and gives its limit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .events import CompactionEvent
from .messages import Message

if TYPE_CHECKING:  # annotations only: the protocol does not load the counter or the stores
    from .sizing import TokenCounter
    from .store.base import Store
    from .summary.contract import Summarizes

LINES_LOGGER = "context_compact.seed"
"""The logger of the lines an engine says (``Env.say``): only the seed says any."""


@dataclass
class Env:
    """What an engine is given besides its policy: where copies go, how to summarize, how to
    count, and where to report. ``session`` names the durable session to continue (None: a
    new one, created on first use). ``summarizer`` was adapted once where it was taken in
    (``summary.adapt``): an engine asks it ``summarize(SummaryRequest)``, whatever it is."""

    store: Store
    summarizer: Summarizes
    counter: TokenCounter
    emit: Callable[[CompactionEvent], None]
    session: str | None = None
    say: Callable[[str], None] = field(default=logging.getLogger(LINES_LOGGER).info)
    """Where an engine's own lines go (the seed's ``[auto compact]``): ``Compactor`` logs
    them (logger ``context_compact.seed``, INFO) and, when the policy says ``echo``, prints
    them; without a Compactor they are only logged."""
    should_compact: Callable[..., bool | None] | None = None
    """The caller's "compact now?" hook (``session/knobs.py``: ``CompactionCheck``)."""
    forget: Callable[[int], None] = field(default=lambda kept: None)
    """``forget(kept)``: a failed call's events did not reach the journal; only the first
    ``kept`` events emitted stand (``Compactor.events`` drops the rest)."""


class PolicyLike(Protocol):
    """What every policy gives: its engine's registry name, its unit, its limit."""

    @property
    def engine(self) -> str: ...

    @property
    def unit(self) -> str:
        """``"tokens"``, or ``"chars"`` for the seed."""
        ...

    @property
    def context_limit(self) -> int: ...

    @property
    def max_reactive_retries(self) -> int:
        """Reactive compactions the agent loop tries per refused call."""
        ...


PAGE = 8_000
"""Characters of one ``recall`` page, unless asked otherwise."""


@dataclass(frozen=True)
class RecallPage:
    """One page of what a ``recall`` query found in a session's log."""

    query: str
    hits: int
    text: str
    offset: int
    total: int

    @property
    def next_offset(self) -> int | None:
        end = self.offset + len(self.text)
        return end if end < self.total else None

    def __str__(self) -> str:
        if not self.hits:
            return f"[recall {self.query!r}: nothing found in this session's log]"
        more = f"; more from offset={self.next_offset}" if self.next_offset is not None else ""
        head = (
            f"[recall {self.query!r}: {self.hits} match(es), characters "
            f"{self.offset}-{self.offset + len(self.text)} of {self.total}{more}]\n"
        )
        return head + self.text


class Engine(Protocol):
    """The core every engine implements (see the module docstring)."""

    name: str

    @property
    def session(self) -> DurableSession | None:
        """The engine's durable session, None for an engine that keeps no log."""
        ...

    @property
    def limit(self) -> int:
        """The most tokens a request may take now (0: the policy's ``context_limit``)."""
        ...

    def prepare(self, messages: list[Message], request: str) -> list[Message]: ...

    def compact(
        self, messages: list[Message], request: str, instructions: str | None = None
    ) -> list[Message]: ...

    def reactive(self, messages: list[Message], request: str) -> list[Message]: ...

    def record(self, messages: list[Message]) -> None:
        """Log what was appended since the last call, without compacting."""
        ...

    def undo(self) -> list[Message]:
        """Take back the newest compaction; ``ValueError`` for an engine without a log."""
        ...

    def observe(self, prompt_tokens: int) -> None: ...

    def overhead(self, tokens: int) -> None: ...

    def request_parts(self, system: str | None, tools: Sequence[object] | None) -> None: ...


@runtime_checkable
class DurableSession(Protocol):
    """A durable session log, as the session engine keeps it (its ``Session``)."""

    @property
    def session_id(self) -> str | None:
        """The session's id, None until it is created (on first use)."""
        ...

    @property
    def window(self) -> tuple[int, str] | None:
        """``(tokens, source)`` of the window the server stated, None while none was."""
        ...

    @property
    def events_written(self) -> int: ...

    @property
    def prefix_mismatch(self) -> str | None: ...

    def sid(self) -> str:
        """The session's id, created on first use."""
        ...

    def view(self) -> list[Message]:
        """The request as it stands, without new messages."""
        ...

    def recall(self, query: str, offset: int, limit: int) -> RecallPage:
        """Search the whole log: text, a path the store issued, or ``message N``."""
        ...

    def recover(self, path: str) -> str | bytes | None:
        """What a file the store issued holds, rebuilt from the log if it is gone."""
        ...

    def measure(self) -> int:
        """Tokens the next request would carry (the API's last count plus an estimate)."""
        ...

    def read_events(self, start: int, stop: int) -> list[CompactionEvent]:
        """Events ``start`` to ``stop`` (exclusive) of the journal, read from the store."""
        ...

    def lent(self) -> AbstractContextManager[None]:
        """Calls whose views the format edge converts (and copies) itself."""
        ...

    def use_window(self, tokens: int, source: str) -> None: ...

    def learn_model(self, model: str | None) -> None: ...

    def thinking_refused(self, at: tuple[int, int] | None) -> None: ...

    def thinking_dropped(self, paths: list[tuple[int, int]]) -> None: ...

    def set_prefix_mismatch(self, behavior: str | None) -> None: ...

    def keep_setting(self, name: str, value: str | int | float | bool | None, source: str) -> None:
        """Journal a per-session setting when it differs from the session's."""
        ...

    def setting(self, name: str) -> str | int | float | bool | None:
        """The session's newest value of setting ``name`` (None when it has none)."""
        ...


class StatelessEngine:
    """Defaults for engines that keep no calibration: observe and overhead are recorded only.

    ``compact`` and ``reactive`` fall back to ``prepare``; engines with a real summary step
    override them.
    """

    name = "stateless"
    fixed_tokens: int = 0
    last_prompt_tokens: int = 0
    session: DurableSession | None = None
    limit: int = 0  # 0: the policy's ``context_limit``

    def prepare(self, messages: list[Message], request: str) -> list[Message]:
        raise NotImplementedError

    def compact(
        self, messages: list[Message], request: str, instructions: str | None = None
    ) -> list[Message]:
        return self.prepare(messages, request)

    def reactive(self, messages: list[Message], request: str) -> list[Message]:
        return self.prepare(messages, request)

    def observe(self, prompt_tokens: int) -> None:
        self.last_prompt_tokens = prompt_tokens

    def overhead(self, tokens: int) -> None:
        self.fixed_tokens = tokens

    def request_parts(self, system: str | None, tools: Sequence[object] | None) -> None:
        return None  # counted as overhead only: no summarizer continues the prefix here

    def record(self, messages: list[Message]) -> None:
        from .invariants import ensure_valid  # loaded with the call: the protocol stays light
        from .messages import as_dicts

        ensure_valid(as_dicts(messages))  # nothing to log; still checked

    def undo(self) -> list[Message]:
        raise ValueError(f"undo needs the default engine; {self.name!r} keeps no log")


__all__ = [
    "LINES_LOGGER",
    "PAGE",
    "DurableSession",
    "Engine",
    "Env",
    "Message",
    "PolicyLike",
    "RecallPage",
    "StatelessEngine",
]
