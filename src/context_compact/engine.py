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

An engine that keeps a durable log (``keeps_log``) also names its session (``session()``,
created on first use), shows the request as it stands (``view()``, what a resumed process
sends next) and logs messages without compacting (``record``). An engine that keeps no state
(the seed, the bench's peers) gets ``StatelessEngine``'s defaults: no session, an empty view,
nothing recorded, ``observe``/``overhead`` remembered only. The session engine recognizes the
caller's history by content, so each call may pass back the list it was given plus what the
caller appended, its own full history, or a copy of either.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from .events import CompactionEvent
from .invariants import ensure_valid
from .messages import as_dicts
from .sizing import TokenCounter
from .store.base import Store

Message = dict[str, Any]
Summarizer = Callable[..., str]


@dataclass
class Env:
    """What an engine is given besides its policy: where copies go, how to summarize, how to
    count, and where to report. ``session`` names the durable session to continue (None: a
    new one, created on first use)."""

    store: Store
    summarizer: Summarizer
    counter: TokenCounter
    emit: Callable[[CompactionEvent], None]
    session: str | None = None
    should_compact: Callable[..., bool | None] | None = None
    """The caller's "compact now?" hook (``session/knobs.py``: ``CompactionCheck``)."""


class Engine(Protocol):
    name: str
    keeps_log: bool

    def prepare(self, messages: list[Any], request: str) -> list[Message]: ...

    def compact(
        self, messages: list[Any], request: str, instructions: str | None = None
    ) -> list[Message]: ...

    def reactive(self, messages: list[Any], request: str) -> list[Message]: ...

    def observe(self, prompt_tokens: int) -> None: ...

    def overhead(self, tokens: int) -> None: ...

    def session(self) -> str | None: ...

    def view(self) -> list[Message]: ...

    def record(self, messages: list[Any]) -> None: ...


class StatelessEngine:
    """Defaults for engines that keep no calibration: observe and overhead are recorded only.

    ``compact`` and ``reactive`` fall back to ``prepare``; engines with a real summary step
    override them.
    """

    name = "stateless"
    keeps_log = False
    fixed_tokens: int = 0
    last_prompt_tokens: int = 0

    def prepare(self, messages: list[Any], request: str) -> list[Message]:
        raise NotImplementedError

    def compact(
        self, messages: list[Any], request: str, instructions: str | None = None
    ) -> list[Message]:
        return self.prepare(messages, request)

    def reactive(self, messages: list[Any], request: str) -> list[Message]:
        return self.prepare(messages, request)

    def observe(self, prompt_tokens: int) -> None:
        self.last_prompt_tokens = prompt_tokens

    def overhead(self, tokens: int) -> None:
        self.fixed_tokens = tokens

    def session(self) -> str | None:
        return None

    def view(self) -> list[Message]:
        return []

    def record(self, messages: list[Any]) -> None:
        """Nothing to log; the history is still checked, as by every entry point."""
        ensure_valid(as_dicts(messages))


__all__ = ["Engine", "Env", "Message", "StatelessEngine", "Summarizer"]
