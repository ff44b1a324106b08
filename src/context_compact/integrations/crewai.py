"""CrewAI hooks that keep every agent's messages inside the context window, inside a task's run.

    from context_compact.integrations.crewai import CompactionHooks

    hooks = CompactionHooks(store, policy=Policy.default(model="gpt-5")).register()
    crew.kickoff()

CrewAI builds each model call from its executor's ``messages`` (OpenAI chat dicts) and runs the
``PRE_MODEL_CALL`` hooks on them first; a hook mutates ``ctx.messages`` in place. Ours replaces
their content with the compactor's view (``messages[:] = view``), so the call sends the view and
the executor goes on appending to it; the compactor recognizes the history by content, so the
next call continues the same session. Nothing is lost: every message the hook saw is in the
compactor's session (``recall``), every elided result in a file the view names. Executors copy
the global hook list when they are made: ``register()`` before ``kickoff``.

One session per conversation. Hooks are process-wide, so the key comes from the executor's run:
the task's id and a run id of ours (a task run again, a new history, is a new session), or the
agent's id for an agent run without a task (``Agent.kickoff``). Two crews running at once are
two sessions. ``hooks.compactor_for(task)`` is the compactor of the task's latest run. Given a
``Compactor``, the first conversation is its session and each other one a compactor of the same
settings (``conversations.compactor_for``); given ``Conversations``, ``conversations.get(key)``;
given a store, ``Conversations(policy, store)``. ``register(agents=[role, ...])`` limits the
hooks to those agents (CrewAI's own ``agents=`` filter, by role).

Usage: the ``POST_MODEL_CALL`` hook does not run on tool-call turns, so usage is read from
CrewAI's ``LLMCallCompletedEvent`` (by task id, or agent id for a run without a task), only
when its messages are the view this hook returned last: CrewAI runs event handlers on a thread
pool, so a late one is not taken for the next call.

A refusal for length (``LLMCallFailedEvent``) is remembered and the conversation's next call is
the compactor's recovered view (the window the refusal states adopted, for the rest of the
session). Between the two, CrewAI (``respect_context_window``, on by default) asks the agent's
LLM to compact the history in place (``llm.summarize_messages``), a model call of its own sized
to the window CrewAI believes the model has, which the server refuses too when its window is
smaller, and whose summary would replace the history with no copy kept (CrewAI takes the same
step before a call its own estimate puts past its model table's window). The hooks take that
step over for the histories they compact: the first call they see through an LLM gives that
instance a ``summarize_messages`` that leaves a compacted history as it is (after waiting for
the refusal's event), so the next call recovers it; any other history goes to CrewAI's own.
``unregister()`` gives the LLMs their own back. With ``respect_context_window=False`` CrewAI
ends the run at the first refusal instead (``SystemExit``): there is no next call to recover.

CrewAI swallows a hook's exceptions (and only prints an event handler's); ours are never
silent: each is logged as a warning and kept in ``hooks.errors``, and one in the hook blocks the
call (``HookAborted``: CrewAI emits its ``HookDispatchedEvent`` with outcome ``aborted`` and
raises it to the caller) rather than let it go out uncompacted.
"""

from __future__ import annotations

import threading
import uuid
import weakref
from dataclasses import dataclass, field
from typing import Any

from ..errors import MissingExtra

try:
    from crewai.events import LLMCallCompletedEvent, LLMCallFailedEvent, crewai_event_bus
    from crewai.hooks import HookAborted, InterceptionPoint, register_hook, unregister_hook
except ImportError as error:  # pragma: no cover - the message is the point
    raise MissingExtra(
        "context_compact.integrations.crewai", "CrewAI", "crewai", "crewai"
    ) from error

from ..compactor import Compactor
from ..providers.thinking import recoverable
from ..store import Store
from ..telemetry import integrations_log
from .clients import latest_request
from .conversations import Conversations, compactor_for, taken

CHAT = "openai-chat"
# How long CrewAI's step after a refusal waits for the refusal's event (it comes in at once).
_FLUSH_SECONDS = 10.0


@dataclass
class _Run:
    """One executor run: its conversation key, what the hook sent last, a refusal to recover."""

    key: str
    first: Any
    compactor: Compactor
    messages: Any = None
    sent: int = 0
    request: str = ""
    refused: BaseException | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class CompactionHooks:
    """The hooks (see the module docstring).

    ``CompactionHooks(compactor)``, ``CompactionHooks(conversations)``, or
    ``CompactionHooks(store, policy=..., summarizer=..., token_counter=...)``.
    """

    def __init__(
        self,
        compactor: Compactor | Conversations | Store | None = None,
        *,
        policy: Any = None,
        **options: Any,
    ) -> None:
        self.compactor: Compactor | None
        self.conversations: Conversations | None
        self.compactor, self.conversations = taken(
            compactor, policy, options, "CompactionHooks", CHAT
        )
        self.errors: list[BaseException] = []
        self._runs: weakref.WeakKeyDictionary[Any, _Run] = weakref.WeakKeyDictionary()
        self._by_task: dict[str, _Run] = {}
        self._by_agent: dict[str, _Run] = {}  # the latest run of an agent without a task
        self._lock = threading.Lock()
        self._registered: Any = None
        # The LLMs whose summarize_messages is ours (by id: pydantic models are unhashable),
        # with what their instance had before, given back by unregister.
        self._llms: dict[int, tuple[weakref.ref[Any], Any, Any]] = {}

    # -- registration ---------------------------------------------------------------------
    def register(self, agents: list[str] | None = None) -> CompactionHooks:
        """Register the hooks (process-wide) for every agent, or the agents of these roles.
        Call it before ``kickoff``: executors copy the hook list when they are made."""
        if self._registered is not None:
            raise RuntimeError("these hooks are registered already: unregister() first")
        roles = set(agents) if agents else None

        def before_model_call(ctx: Any) -> None:
            if roles is None or getattr(ctx.agent, "role", None) in roles:
                self.before_model_call(ctx)

        register_hook(InterceptionPoint.PRE_MODEL_CALL, before_model_call)
        crewai_event_bus.register_handler(LLMCallCompletedEvent, self._completed)
        crewai_event_bus.register_handler(LLMCallFailedEvent, self._failed)
        self._registered = before_model_call
        return self

    def unregister(self) -> None:
        """Remove the hooks (executors made before keep their copy of the hook list)."""
        if self._registered is None:
            return
        unregister_hook(InterceptionPoint.PRE_MODEL_CALL, self._registered)
        crewai_event_bus.off(LLMCallCompletedEvent, self._completed)
        crewai_event_bus.off(LLMCallFailedEvent, self._failed)
        self._registered = None
        with self._lock:
            llms, self._llms = list(self._llms.values()), {}
        for ref, before, ours in llms:
            llm = ref()
            # Hooks registered since may have wrapped ours: it then hands every history on.
            if llm is None or vars(llm).get("summarize_messages") is not ours:
                continue
            if before is None:
                vars(llm).pop("summarize_messages", None)
            else:
                object.__setattr__(llm, "summarize_messages", before)

    # -- conversations --------------------------------------------------------------------
    def compactor_for(self, task: Any) -> Compactor:
        """The compactor of ``task``'s latest run (its session, its ``recall``)."""
        with self._lock:
            run = self._by_task.get(str(getattr(task, "id", task)))
        if run is None:
            raise KeyError(f"no run of task {getattr(task, 'id', task)} was compacted")
        return run.compactor

    def _compactor(self, key: str) -> Compactor:
        if self.conversations is not None:
            found = self.conversations.get(key)
        else:
            assert self.compactor is not None
            found = compactor_for(self.compactor, key)
        if found.format == "auto":
            found.format = CHAT
        elif found.format != CHAT:
            raise ValueError(
                f"CompactionHooks: this compactor holds a {found.format!r} conversation; "
                "CrewAI sends OpenAI chat messages: give it a Compactor of its own"
            )
        return found

    def _run(self, ctx: Any) -> _Run:
        """The run of the executor behind ``ctx``: a new one when its history restarted."""
        executor = ctx.executor
        first = _first(ctx.messages)
        with self._lock:
            run = self._runs.get(executor)
            if run is None or run.first is not first:
                owner = ctx.task if ctx.task is not None else ctx.agent
                key = f"{getattr(owner, 'id', 'agent')}-{uuid.uuid4().hex[:8]}"
                run = _Run(key, first, self._compactor(key))
                self._runs[executor] = run
            if ctx.task is not None:
                self._by_task[str(ctx.task.id)] = run
            elif getattr(ctx.agent, "id", None) is not None:
                self._by_agent[str(ctx.agent.id)] = run
            run.messages = ctx.messages
        return run

    def _take_over_summaries(self, llm: Any) -> None:
        """``llm.summarize_messages`` (CrewAI's step after a refusal) leaves the histories
        these hooks compact to the next call's recovery (see the module docstring)."""
        if llm is None or not hasattr(llm, "summarize_messages"):
            return
        with self._lock:
            known = self._llms.get(id(llm))
            if known is not None and known[0]() is llm:
                return
            own = llm.summarize_messages

            def summarize_messages(messages: Any, *args: Any, **kwargs: Any) -> Any:
                if not self._compacts(messages):
                    return own(messages, *args, **kwargs)
                # The refusal's event, on CrewAI's handler pool, marks the run to recover.
                crewai_event_bus.flush(timeout=_FLUSH_SECONDS)
                integrations_log.debug("crewai: CrewAI's summary skipped: the next call recovers")
                return None

            before = vars(llm).get("summarize_messages")
            self._llms[id(llm)] = (weakref.ref(llm), before, summarize_messages)
            # Set on the instance, past pydantic's field checks: CrewAI's LLMs are models.
            object.__setattr__(llm, "summarize_messages", summarize_messages)

    def _compacts(self, messages: Any) -> bool:
        with self._lock:
            return self._registered is not None and any(
                run.messages is messages for run in self._runs.values()
            )

    # -- the hook and the events ----------------------------------------------------------
    def before_model_call(self, ctx: Any) -> None:
        """``PRE_MODEL_CALL``: ``ctx.messages`` replaced in place by the compactor's view."""
        if ctx.executor is None:  # a direct LLM call (CrewAI's own summaries): not a run
            return
        try:
            run = self._run(ctx)
            self._take_over_summaries(ctx.llm)
            messages = list(ctx.messages)
            found = latest_request(messages)
            with run.lock:
                if found is not None:
                    run.request = found
                refused, run.refused = run.refused, None
                compactor = run.compactor
                compactor.learn_model(_model_name(getattr(ctx.llm, "model", None)))
                if refused is not None:
                    integrations_log.debug("crewai: recovering the refusal of the last call")
                    view = compactor.recover(refused, messages, run.request)
                else:
                    view = compactor.prepare(messages, run.request)
                ctx.messages[:] = view
                run.sent = len(view)
                run.first = _first(ctx.messages)
        except Exception as error:
            self._noted(error, "the call is blocked")
            raise HookAborted(f"context-compact: {error}", source=self) from error

    def _run_of(self, event: Any) -> _Run | None:
        task = getattr(event, "task_id", None)
        agent = getattr(event, "agent_id", None)
        with self._lock:
            if task is not None:
                return self._by_task.get(str(task))
            return self._by_agent.get(str(agent)) if agent is not None else None

    def _completed(self, source: Any, event: Any) -> None:
        try:
            run = self._run_of(event)
            usage = getattr(event, "usage", None)
            sent = event.messages if isinstance(event.messages, list) else None
            # A late event (handlers run on a thread pool) must not calibrate a newer call.
            if run is None or usage is None or sent is None or len(sent) != run.sent:
                return
            with run.lock:
                if len(sent) == run.sent:
                    run.compactor.observe(usage)
        except Exception as error:  # CrewAI's event bus would only print it
            self._noted(error, "a response's usage is not taken")

    def _failed(self, source: Any, event: Any) -> None:
        try:
            run = self._run_of(event)
            cause = recoverable(RuntimeError(str(getattr(event, "error", ""))))
            if run is not None and cause is not None:
                with run.lock:
                    run.refused = cause
        except Exception as error:  # CrewAI's event bus would only print it
            self._noted(error, "a refusal is not taken")

    def _noted(self, error: Exception, what: str) -> None:
        self.errors.append(error)
        integrations_log.warning("context-compact: %s: %s", what, error)


def _first(messages: list[Any]) -> Any:
    """The first message after the system prompt: a new object when the history restarts."""
    return next((m for m in messages if m.get("role") != "system"), None)


def _model_name(model: Any) -> str | None:
    return model.rsplit("/", 1)[-1] if isinstance(model, str) else None


__all__ = ["CompactionHooks"]
