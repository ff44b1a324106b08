"""What a compaction tells the outside: log records, and OpenTelemetry spans when installed.

Loggers, one per layer, all under ``context_compact`` (which has a ``NullHandler``: nothing
is printed unless the application configures logging):

- ``context_compact.compactor``: every compaction event at DEBUG (stage, tokens before and
  after, the files that hold what left); a summarizer that failed (``summary_fallback``) or a
  store that refused a write (``store_error``) at WARNING;
- ``context_compact.integrations``: a refusal for length recovered by a drop-in client or an
  adapter (compacted, resent) at DEBUG;
- ``context_compact.providers``: an API refusal mapped to ``ContextOverflow`` at DEBUG;
- ``context_compact.loaders``: what an import skipped (already there).

A model whose window we do not know is not logged but warned of, once per process per model
(``errors.UnknownModelWarning``, ``warnings.warn``: Python prints it unless filtered;
``logging.captureWarnings(True)`` routes it to logging); the CLI says it itself on stderr.

Spans (the ``[otel]`` extra, ``opentelemetry-api``; without it nothing is traced): each
``Compactor`` call that compacted (``prepare``, ``compact_history``, ``reactive_compact``) is
one span of the ``context_compact`` tracer, in the caller's current trace (so LangSmith,
Logfire or Langfuse show it inside the agent's run), named ``compact_context {model}``, with
the GenAI semantic conventions' attributes where they apply (``gen_ai.operation.name`` =
``compact_context``, ``gen_ai.conversation.id`` the session, ``gen_ai.request.model``) and
ours: ``context_compact.stages`` (in order), ``.tokens_before``, ``.tokens_after``,
``.unit``, ``.paths``, ``.engine``, ``.trigger`` (the method). A call that compacted nothing
makes no span.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .events import CompactionEvent

logging.getLogger("context_compact").addHandler(logging.NullHandler())

compactor_log = logging.getLogger("context_compact.compactor")
integrations_log = logging.getLogger("context_compact.integrations")
providers_log = logging.getLogger("context_compact.providers")

OPERATION = "compact_context"
_WARNINGS = frozenset({"summary_fallback", "store_error"})


def log_event(event: CompactionEvent) -> None:
    level = logging.WARNING if event.stage in _WARNINGS else logging.DEBUG
    if compactor_log.isEnabledFor(level):
        compactor_log.log(level, "%s", event)


def _tracer() -> Any:
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace.get_tracer("context_compact")


@contextmanager
def compaction_span(compactor: Any, trigger: str) -> Iterator[None]:
    """One span for the events ``compactor`` emits inside this block, if any (see above)."""
    first = len(compactor.events)
    start = time.time_ns()
    try:
        yield
    finally:
        events: list[CompactionEvent] = compactor.events[first:]
        tracer = _tracer() if events else None
        if tracer is not None:
            try:
                _span(tracer, compactor, trigger, events, start)
            except Exception:  # tracing must never fail, nor mask, the compaction
                compactor_log.debug("the compaction span was not recorded", exc_info=True)


def _span(
    tracer: Any, compactor: Any, trigger: str, events: list[CompactionEvent], start: int
) -> None:
    model = getattr(compactor.policy, "model", None)
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": OPERATION,
        "context_compact.trigger": trigger,
        "context_compact.engine": compactor.name,
        "context_compact.stages": [e.stage for e in events],
        "context_compact.tokens_before": events[0].before,
        "context_compact.tokens_after": events[-1].after,
        "context_compact.unit": events[-1].unit,
        "context_compact.paths": [p for e in events for p in e.paths],
    }
    if model:
        attributes["gen_ai.request.model"] = model
    # The id the engine holds, if any: creating a session here would write to the store.
    durable = compactor.engine.session
    session = None if durable is None else durable.session_id
    if session:
        attributes["gen_ai.conversation.id"] = session
    name = f"{OPERATION} {model}" if model else OPERATION
    span = tracer.start_span(name, start_time=start, attributes=attributes)
    span.end()


__all__ = ["OPERATION", "compaction_span", "log_event"]
