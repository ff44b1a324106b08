"""Compactor: the one object an agent loop calls before every model request.

    compactor = Compactor(Policy.default(model=MODEL), SqliteStore("sessions.db"), summarizer)
    messages = compactor.prepare(messages, active_request)

It forwards to one Engine (``engine.py``), built by the registry from the policy, and means
the same thing under every engine:

* ``prepare``: the request to send now; ``compact_history``: compact now (``/compact``);
  ``reactive_compact``: after the API refused the prompt as too long (S-5);
* ``observe(usage)`` and ``set_request(system, tools)``: calibrate the budget with the API's
  real counts and the fixed part of every request.

Invariants, for every method: the input must pass ``check()`` (else ``InvalidHistory`` naming
the message and the rule); the output passes ``check()``; the input list, its messages and
blocks are never modified; every change is reported as a ``CompactionEvent`` to ``events``
and to subscribers. ``session=ID`` continues a durable session kept by the store (the default
engine); ``view()`` is the request as it stands, to continue from after a restart. The
session-only calls (``view``, ``recall``, ``recover_file``, ``session_id``, the window, the
thinking calls) go to ``engine.session``, the engine's ``DurableSession`` (``engine.py``),
asked for as ``engine.session is not None``, never by the engine's class; under an engine
without one,
``recall`` and ``durable`` raise ``ValueError`` and the others do nothing (an empty view, no
session, nothing recorded: the history is still checked).

``summarizer`` is a ``Summarizes`` (``summarize(SummaryRequest) -> SummaryResult``, such as
``LLMSummarizer``) or a plain callable ``summarizer(messages) -> str``, adapted here once
(``summary.adapt``: the previous summary and the focus reach a callable as notes among the
messages); every engine below calls ``summarize(request)``. The default is the extractive
summary.

``token_counter=`` (``text -> tokens``) replaces our estimate with your model's tokenizer
(LangChain's ``token_counter``); ``should_compact=`` is your "compact now?" hook, asked before
each ``prepare`` compacts with a ``session.knobs.CompactionCheck`` (tokens, limit, messages,
what the policy says): True compacts now, False holds off while the request fits the limit,
None leaves it to the policy. Both are arguments, not policy fields: a policy is data, stored
with the session.

``format=`` names the caller's list format once (``"anthropic"``, ``"openai-chat"``,
``"openai-responses"``) or ``"auto"`` (the default): the first list that decides fixes it
(``formats.detect``). Engines work on Anthropic-shaped dicts; other formats are converted at
this edge (``formats/edge.py``) and every method returns the caller's format, its leading
system messages first (counted in every budget, never summarized).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, NoReturn, TypeVar, cast

from . import events as event_module
from .engine import (
    LINES_LOGGER,
    PAGE,
    DurableSession,
    Engine,
    Env,
    PolicyLike,
    RecallPage,
)
from .events import CompactionEvent, EventLog
from .formats.choice import FormatChoice
from .formats.edge import Edge, crossing, dumped
from .messages import Message
from .policy import Policy
from .providers.errors import is_context_overflow, overflow_figures
from .providers.thinking import dropped_paths, thinking_refused
from .registry import build_engine
from .sizing import TokenCounter, to_json
from .sizing.request import RequestOverhead, prompt_tokens_of
from .store.base import Store
from .summary.contract import Summarizer, Summarizes, adapt
from .summary.extract import extractive_summary
from .telemetry import compaction_span, log_event

SYSTEM_SETTING = "system_items"
"""The ``Setting`` holding the leading system items of the caller's format (JSON), so the
view of a resumed session starts with them."""

log = logging.getLogger(LINES_LOGGER)

Item = TypeVar("Item")
"""An item of the caller's list: an Anthropic, OpenAI Chat or OpenAI Responses message (a
dict, a typed SDK param, or an SDK object the API returned). What comes back is a list of
the same items (an SDK object comes back as the dict the API sent)."""


def _as_given(edge: Edge | None, view: list[Message] | None, given: list[Item]) -> list[Item]:
    """The engine's ``view`` for the caller of ``given``: in its format (``dumped``)."""
    # The edge dumps into the format the caller's list came in: items of its own type, up to
    # an SDK object, which comes back as the dict the API sent.
    return cast("list[Item]", dumped(edge, view))


class Compactor:
    def __init__(
        self,
        policy: PolicyLike | None = None,
        store: Store | None = None,
        summarizer: Summarizer | None = None,
        *,
        session: str | None = None,
        format: str = "auto",
        token_counter: Callable[[str], int] | None = None,
        should_compact: Callable[..., bool | None] | None = None,
    ) -> None:
        self._formats = FormatChoice(format)  # the caller's format and its edges
        self._made_with = (format, token_counter, should_compact)
        self._overhead = RequestOverhead()  # counted into every budget
        self.policy: PolicyLike = policy if policy is not None else Policy.default()
        if store is None:
            from .store.files import FileStore  # loaded only when it is the store

            store = FileStore(Path.cwd())
        self.store: Store = store
        # The one place a summarizer's kind matters: a plain callable is adapted here, once.
        chosen = summarizer if summarizer is not None else extractive_summary
        self.summarizer: Summarizes = adapt(chosen)
        self.events = EventLog()
        self._subscribers: list[Callable[[CompactionEvent], None]] = []
        # One call at a time: the engine's view and journal are one sequence, and async callers
        # run it on worker threads.
        self._lock = threading.RLock()
        # Real token counts where the model family's encoding ships with an installed package;
        # the estimate otherwise, calibrated by ``observe`` (the seed counts characters).
        self.tokens = TokenCounter(
            use_tiktoken=self.policy.unit == "tokens",
            model=getattr(self.policy, "model", None),
            counter=token_counter,
        )
        env = Env(
            self.store,
            self.summarizer,
            self.tokens,
            self._emit,
            session,
            self._say,
            should_compact,
            lambda kept: self.events.forget(kept),
        )
        self.engine: Engine = build_engine(self.policy, env)
        # An engine that journals its events keeps them in the store: only the newest stay
        # in memory, so a long session's memory stays flat (``events.EventLog``).
        durable = self.engine.session
        if durable is not None:
            # A resumed session's events are its own: those its journal holds come first.
            self.events = EventLog(
                durable.read_events,
                lambda: durable.events_written,
                window=event_module.EVENT_WINDOW,
                before=durable.events_written,
            )
        if session is not None and not self.keeps_log:
            raise ValueError(
                f"session={session!r}: the {self.engine.name!r} engine keeps no session log to "
                "continue; use Policy.default()"
            )

    def sibling(self, session: str | None = None) -> Compactor:
        """A compactor with this one's settings (policy, store, summarizer, format, token
        counter, ``should_compact`` hook; the same subscribers) on another session: ``session``
        (created on first use, resumed when the store has it) or a new one. What one
        conversation needs when this one already serves another (``integrations``)."""
        fmt, counter, hook = self._made_with
        other = Compactor(
            self.policy,
            self.store,
            self.summarizer,
            session=session,
            format=fmt,
            token_counter=counter,
            should_compact=hook,
        )
        other._subscribers = self._subscribers  # one list: a later subscribe reaches both
        return other

    def __reduce__(self) -> NoReturn:
        # A compactor is a live handle on one session (its view, its journal's pending
        # records, the store's connection and lease): a copy in another process would be a
        # second writer of the same log. Say how to share the session instead.
        raise TypeError(
            "a Compactor cannot be pickled: it is a live handle on one session. To continue "
            "it in another process, open it there by id, "
            "Compactor(policy, store, session=compactor.session_id), on a store both "
            "processes reach (SqliteStore on one machine, PostgresStore across machines); "
            "one process writes a session at a time"
        )

    @property
    def format(self) -> str:
        """The caller's list format: as given, or the one ``"auto"`` found (``formats``)."""
        return self._formats.name

    @format.setter
    def format(self, name: str) -> None:
        self._formats.name = FormatChoice(name).name  # checked as the constructor checks it

    @property
    def name(self) -> str:
        """The engine's registry name (``default``, ``seed``, a bench peer...)."""
        return self.engine.name

    @property
    def session_id(self) -> str | None:
        """The durable session this compactor writes, created on first use (None for engines
        that keep no log). Keep it to resume: ``Compactor(..., session=ID)``."""
        durable = self.engine.session
        return None if durable is None else durable.sid()

    @property
    def durable(self) -> DurableSession:
        """The engine's durable session (view, record, recall, recover, measure); a
        ``ValueError`` under an engine that keeps no log."""
        durable = self.engine.session
        if durable is None:
            raise ValueError(f"the {self.name!r} engine keeps no session log; use Policy.default()")
        return durable

    def view(self) -> list[Any]:
        """The request as it stands, without new messages (after a resume: what the stopped
        process would have sent next), in the format of the last list given, or of a fixed
        ``format=`` (a resumed session's view then starts with the system items it was last
        given, which the session journals); canonical under ``"auto"`` after a resume, until
        a list decides. Engines without a log have none: an empty list."""
        with self._lock:
            if not self.keeps_log:
                return []
            edge = self._formats.fixed()
            if edge is None:
                return self.durable.view()
            durable = self.durable
            if not edge.loaded:
                kept = durable.setting(SYSTEM_SETTING)  # the resumed session's system items
                edge.restore(json.loads(kept) if isinstance(kept, str) else [])
            with self._lent():
                return edge.dump(self.durable.view())

    def recall(self, query: str, offset: int = 0, limit: int = PAGE) -> RecallPage:
        """Search this session's whole log (text, a path the store issued, or ``message N``)
        and get the original content back, one page of ``limit`` characters from ``offset``."""
        if not self.keeps_log:
            raise ValueError(f"recall needs a session log; the {self.name!r} engine keeps none")
        with self._lock:
            return self.durable.recall(query, offset, limit)

    def recover_file(self, path: str) -> str | bytes | None:
        """The content of a file the store issued, rebuilt from this session's log when it
        was deleted behind our back (bytes for an image or PDF); None for any other path, or
        under an engine that keeps no log."""
        if not self.keeps_log:
            return None
        return self.durable.recover(path)

    @property
    def keeps_log(self) -> bool:
        """True when the engine keeps a durable session log (``recall`` and resume work)."""
        return self.engine.session is not None

    def set_request(self, system: str | None = None, tools: Sequence[object] | None = None) -> None:
        """Count the system prompt and tool schemas into every budget (system messages at
        the head of an OpenAI list are counted without this)."""
        key = (system or "", to_json(tools or []))
        with self._lock:
            self.engine.request_parts(system, tools)
            total = self._overhead.set("request", key, lambda: sum(map(self.tokens.text, key)))
            self.engine.overhead(total)

    def observe(self, usage: object) -> None:
        """Calibrate with the API's usage for the request returned last.

        ``usage`` is a ``providers.Usage``, an Anthropic SDK usage (``input_tokens`` plus the
        cache read/creation counts), an OpenAI SDK usage (``prompt_tokens``), the same as a
        dict, or an int. Anything else is ignored rather than guessed at. It takes the lock
        ``prepare`` holds: a usage observed while another thread prepares applies after it.
        """
        with self._lock:
            self.engine.observe(prompt_tokens_of(usage))

    def use_window(self, tokens: int, source: str) -> None:
        """The model's context window as the server states it (``providers.local``, or a
        refusal's "maximum context length is N"): under the default engine it caps the limit
        for the rest of the session, resumes included (journaled), and the next call says so
        in a ``window`` event. Other engines keep their policy's limit."""
        durable = self.engine.session
        if durable is not None:
            with self._lock:
                durable.use_window(tokens, source)

    @property
    def window(self) -> tuple[int, str] | None:
        """``(tokens, source)`` of the window the server stated, None while none was."""
        durable = self.engine.session
        return None if durable is None else durable.window

    @property
    def limit(self) -> int:
        """The most tokens a request may take now: the policy's ``context_limit``, capped
        by the window the server stated."""
        return self.engine.limit or self.policy.context_limit

    def subscribe(self, callback: Callable[[CompactionEvent], None]) -> None:
        self._subscribers.append(callback)

    def _say(self, line: str) -> None:
        # An engine's own lines (the seed's ``[auto compact]``): logged, and printed where the
        # policy asks for the seed's own output.
        log.info(line)
        if getattr(self.policy, "echo", False):
            print(line)

    def _emit(self, event: CompactionEvent) -> None:
        log_event(event)
        self.events.append(event)
        for callback in self._subscribers:
            callback(event)

    # -- the format edge: a call is the caller's list in, the engine's call, the view out --
    def _edge_in(self, messages: list[Item]) -> tuple[Edge | None, list[Message]]:
        """The caller's list as the engine takes it, and the edge it came through (None for
        a canonical list); the system text it carries is counted as overhead."""
        edge = self._formats.edge_for(messages)
        if edge is None:
            # Anthropic messages as the caller gave them: the engine checks them and turns
            # SDK blocks into dicts (``as_dicts``, ``ensure_valid``).
            return None, cast("list[Message]", messages)
        canonical = edge.load(messages)
        text = edge.system_text
        self.engine.overhead(self._overhead.set("system", text, lambda: self.tokens.text(text)))
        return edge, canonical

    def _keep_system(self, edge: Edge | None) -> None:
        """After a call the engine took: the list's system items journaled when they changed,
        so the view of a resumed session starts with them."""
        durable = self.engine.session
        if edge is not None and durable is not None:
            durable.keep_setting(SYSTEM_SETTING, json.dumps(edge.system), "caller")

    def _lent(self) -> AbstractContextManager[None]:
        # The edge converts the engine's messages into copies of its own: the engine need
        # not copy them first (``Session.lent``).
        durable = self.engine.session
        return nullcontext() if durable is None else durable.lent()

    def prepare(self, messages: list[Item], active_request: str) -> list[Item]:
        """The request to send now, in the caller's format (see the module docstring)."""
        with self._lock, compaction_span(self, "prepare"):
            edge, canonical = self._edge_in(messages)
            with crossing(edge, self._lent):
                view = self.engine.prepare(canonical, active_request)
            self._keep_system(edge)
            return _as_given(edge, view, messages)

    def record(self, messages: list[Item]) -> None:
        """Log what was appended since the last call (the model's final answer) without
        compacting, so a resumed session has it. A no-op for engines that keep no log."""
        with self._lock:
            edge, canonical = self._edge_in(messages)
            with crossing(edge, self._lent):
                self.engine.record(canonical)  # an engine without a log only validates
            self._keep_system(edge)

    def compact_history(
        self,
        messages: list[Item],
        active_request: str,
        instructions: str | None = None,
        *,
        keep_recent_turns: int | None = None,
    ) -> list[Item]:
        """Compact now. ``keep_recent_turns`` (default engine only): the turns kept verbatim,
        1 by default; 0 summarizes everything but the first request, the pinned user words
        and the results the model has not seen yet (a final answer goes into the summary;
        only a trailing call whose results are still to come stays)."""
        if keep_recent_turns is not None and not self.keeps_log:
            raise ValueError(
                f"keep_recent_turns needs the default engine; {self.engine.name!r} always "
                "summarizes what it compacts"
            )
        engine: Any = self.engine  # ``keep_recent_turns``: the default engine's own keyword
        keep = {} if keep_recent_turns is None else {"keep_recent_turns": keep_recent_turns}
        with self._lock, compaction_span(self, "compact_history"):
            edge, canonical = self._edge_in(messages)
            with crossing(edge, self._lent):
                view = engine.compact(canonical, active_request, instructions, **keep)
            self._keep_system(edge)
            return _as_given(edge, view, messages)

    def reactive_compact(self, messages: list[Item], active_request: str) -> list[Item]:
        """The view to retry with after the API refused the prompt as too long
        (``is_context_overflow(error)``): compacted now, whatever the thresholds say. Call it
        once, then send what it returns."""
        with self._lock, compaction_span(self, "reactive_compact"):
            edge, canonical = self._edge_in(messages)
            with crossing(edge, self._lent):
                view = self.engine.reactive(canonical, active_request)
            self._keep_system(edge)
            return _as_given(edge, view, messages)

    def recover(
        self, error: BaseException, messages: list[Item], active_request: str
    ) -> list[Item]:
        """After the API refused the request ``prepare`` returned: the request to send
        instead. A prompt too long compacts hard (``reactive_compact``), the window the
        refusal states adopted first (the limit keeps to the server's window from then on,
        journaled); a thinking block
        whose prefix changed ("bound to a different conversation", on models with preserved
        thinking) takes the thinking from that block on out of the view, for good, and the
        session learns that its model checks. Any other error is raised again: resending
        would not help."""
        refused = thinking_refused(error)
        durable = self.engine.session
        if refused is not None and durable is not None:
            at = refused.message_index, refused.block_index
            with self._lock:
                durable.thinking_refused(None if at[0] is None else (at[0], at[1] or 0))
            return self.prepare(messages, active_request)
        if is_context_overflow(error):
            figures = overflow_figures(error)
            if figures.window and figures.window < self.limit:
                # The window the server stated, below what we took it to be: every later
                # request keeps to it (journaled). One at or above the limit changes nothing.
                self.use_window(figures.window, "the server's refusal")
            elif not figures.window and durable is not None:
                # A refusal that states no window (the Responses API's "exceeds the context
                # window of this model") still bounds it: the window is below the request
                # refused. Taken as the window, it keeps the next requests under that size
                # instead of meeting the same refusal at every turn.
                with self._lock:
                    refused_size = figures.prompt_tokens or durable.measure()
                if refused_size < self.limit:
                    self.use_window(refused_size, "below a request the server refused")
            return self.reactive_compact(messages, active_request)
        raise error

    @property
    def prefix_mismatch_behavior(self) -> str | None:
        """What the drop-in client asks of the API when a thinking block's prefix changed
        (``"drop_block"``, or None: the API's default, a refusal), kept with the session."""
        durable = self.engine.session
        return None if durable is None else durable.prefix_mismatch

    @prefix_mismatch_behavior.setter
    def prefix_mismatch_behavior(self, behavior: str | None) -> None:
        durable = self.engine.session
        if durable is not None:
            with self._lock:
                durable.set_prefix_mismatch(behavior)

    def learn_model(self, model: object) -> None:
        """The model a request names (the drop-in clients pass it): one known to bind its
        thinking to its prefix turns that on for the session (``preserved_thinking``)."""
        durable = self.engine.session
        if durable is not None and isinstance(model, str):
            with self._lock:
                durable.learn_model(model)

    def thinking_dropped(self, response: object) -> int:
        """Read a response's ``input_transformations``: the thinking blocks the API dropped
        from the request leave the next view at the same point (so the cached prefix stops
        moving). How many were listed."""
        paths = dropped_paths(response)
        durable = self.engine.session
        if paths and durable is not None:
            with self._lock:
                durable.thinking_dropped(paths)
        return len(paths)

    def undo(self) -> list[Any]:
        """Take back the newest compaction (a summary or a clearing) as a new record in the
        session's log: the view returned is what it would have been without it, plus what
        came since; continue from it. Undone compactions stay in the log and in ``inspect``.
        ``UndoRefused`` (nothing changed) when there is none left, or when that view would
        be over the limit. Default engine only."""
        with self._lock, compaction_span(self, "undo"):
            self.engine.undo()
        return self.view()

    # Async twins for async-first loops and frameworks: the same call on a worker thread, so
    # store I/O and summarizing never block the event loop; calls on one compactor still run
    # one at a time, in the order they take the lock.
    async def aprepare(self, messages: list[Item], active_request: str) -> list[Item]:
        return await asyncio.to_thread(self.prepare, messages, active_request)

    async def arecall(self, query: str, offset: int = 0, limit: int = PAGE) -> RecallPage:
        return await asyncio.to_thread(self.recall, query, offset, limit)

    async def arecord(self, messages: list[Item]) -> None:
        await asyncio.to_thread(self.record, messages)

    async def acompact_history(
        self, messages: list[Item], active_request: str, instructions: str | None = None
    ) -> list[Item]:
        return await asyncio.to_thread(self.compact_history, messages, active_request, instructions)

    async def areactive_compact(self, messages: list[Item], active_request: str) -> list[Item]:
        return await asyncio.to_thread(self.reactive_compact, messages, active_request)


__all__ = ["Compactor", "Item", "prompt_tokens_of"]
