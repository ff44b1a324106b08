"""A pydantic-ai history processor that compacts the agent's messages before every request.

    from pydantic_ai import Agent
    from context_compact.integrations.pydantic_ai import CompactionCapability

    agent = Agent(model, capabilities=[CompactionCapability(compactor)])
    # or a plain processor: capabilities=[ProcessHistory(history_processor(compactor))]
    # pydantic-ai 1.x: Agent(model, history_processors=[history_processor(compactor)])

``CompactionCapability`` (pydantic-ai 2.x) is the whole integration: the processor, the tool
schemas counted into the budget, and a refusal for length recovered (compacted reactively,
the request attempted once more). A bare ``history_processor`` sees only the messages: it
counts instructions but not tool schemas, and cannot retry a refusal.

pydantic-ai runs a history processor before each model request and keeps what it returns as
the run's history (``ProcessHistory`` writes it back), so ``result.all_messages()`` is the
view: a result that left it reads as its marker (``Tool result cleared ... full text at
PATH``), and the compactor's store keeps everything else: every message the processor was
given is in the session log (``compactor.recall``), every cleared result and summarized turn
in a file the view names. Passing ``result.all_messages()`` to the next run continues the same
session (the compactor recognizes its view plus what was appended). Each conversation
(pydantic-ai's ``conversation_id``: a new one for a run without ``message_history``, the
history's own for a run continuing it) is a session of its own: the first is the given
compactor's, each other one a compactor of the same settings (``conversations.compactor_for``).

The conversion (one ``ModelMessage`` is one canonical message, originals back wherever the
compactor left them alone) is ``pydantic_ai_convert.py``; the last response's ``usage``
calibrates the budget and each request's ``instructions`` count into it.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..errors import MissingExtra

try:
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        UserPromptPart,
    )
except ImportError as error:  # pragma: no cover - the message is the point
    raise MissingExtra(
        "context_compact.integrations.pydantic_ai", "pydantic-ai", "pydantic-ai", "pydantic-ai-slim"
    ) from error

from ..compactor import Compactor
from ..messages import Message
from ..providers.thinking import recoverable
from ..telemetry import integrations_log
from ._bridge import Converted, Units
from .conversations import compactor_for
from .options import given_or_built
from .options import model_summarizer as summarizer_over
from .pydantic_ai_convert import latest_request, restore, to_dict, units_of

Processor = Callable[[list[ModelMessage]], list[ModelMessage]]
AsyncProcessor = Callable[[list[ModelMessage]], Awaitable[list[ModelMessage]]]


class _Processor:
    """The shared state of one processor: conversions kept between calls, the last usage seen."""

    def __init__(self, compactor: Compactor) -> None:
        self.compactor = compactor
        self.units = Units()
        self.observed: Any = None

    def before(
        self, messages: list[ModelMessage], tools: list[Any] | None = None
    ) -> tuple[list[Converted], list[Message], str]:
        responses = [m for m in messages if isinstance(m, ModelResponse)]
        # The last response answered the view returned last: its usage calibrates the budget.
        if responses and responses[-1] is not self.observed:
            self.observed = responses[-1]
            self.compactor.observe(responses[-1].usage.input_tokens)
        last = messages[-1] if messages else None
        instructions = last.instructions if isinstance(last, ModelRequest) else None
        if instructions or tools:
            self.compactor.set_request(instructions, tools)
        converted = self.units.convert(units_of(messages), to_dict)
        return converted, [c.message for c in converted], latest_request(messages)


def conversation_id(messages: Sequence[Any]) -> str | None:
    """The run's conversation as pydantic-ai stamps it on its messages (the newest one
    that names one); None before pydantic-ai 2 or for a history that names none."""
    for message in reversed(messages):
        found = getattr(message, "conversation_id", None)
        if found is not None:
            return str(found)
    return None


class _PerConversation:
    """One ``_Processor`` per conversation of one compactor (``compactor_for``): each
    pydantic-ai conversation is its own session. Only the newest few keep their conversion
    caches; the compactors themselves are kept by the routing."""

    def __init__(self, compactor: Compactor) -> None:
        self.compactor = compactor
        self._states: OrderedDict[str | None, _Processor] = OrderedDict()

    def get(self, key: str | None) -> _Processor:
        compactor = compactor_for(self.compactor, key)
        state = self._states.get(key)
        if state is None or state.compactor is not compactor:
            state = self._states[key] = _Processor(compactor)
        self._states.move_to_end(key)
        while len(self._states) > 64:
            self._states.popitem(last=False)
        return state


def history_processor(compactor: Compactor) -> AsyncProcessor:
    """An async history processor: compaction and store I/O run off the event loop
    (``Compactor.aprepare``). Works under ``agent.run`` and ``agent.run_sync`` alike. Each
    conversation (``conversation_id``) is its own session (``_PerConversation``)."""
    states = _PerConversation(compactor)

    async def compact_history(messages: list[ModelMessage]) -> list[ModelMessage]:
        state = states.get(conversation_id(messages))
        converted, dicts, active = state.before(messages)
        return restore(await state.compactor.aprepare(dicts, active), converted)

    return compact_history


def sync_history_processor(compactor: Compactor) -> Processor:
    """The same processor as a plain function (pydantic-ai runs it on a worker thread), for
    code that processes a history outside an event loop."""
    states = _PerConversation(compactor)

    def compact_history(messages: list[ModelMessage]) -> list[ModelMessage]:
        state = states.get(conversation_id(messages))
        converted, dicts, active = state.before(messages)
        return restore(state.compactor.prepare(dicts, active), converted)

    return compact_history


try:
    from pydantic_ai.capabilities import AbstractCapability as _Capability
    from pydantic_ai.exceptions import ModelContextWindowExceededError, RetryModelRequest
except ImportError:  # pragma: no cover - pydantic-ai 1.x has no capabilities
    _Capability = None  # type: ignore[assignment, misc, unused-ignore]


def _tool_schemas(parameters: Any) -> list[Any]:
    """The function and output tools of a request as the model is sent them."""
    tools = [*parameters.function_tools, *parameters.output_tools]
    return [
        {"name": t.name, "description": t.description, "parameters": t.parameters_json_schema}
        for t in tools
    ]


def model_summarizer(model: Any, **options: Any) -> Any:
    """An ``LLMSummarizer`` asking a pydantic-ai model (a ``Model`` or a name such as
    ``"anthropic:claude-sonnet-5-5"``) for each summary, through ``pydantic_ai.direct``. The
    session engine calls a summarizer on a worker thread of its own, so each call runs in an
    event loop of its own (``asyncio.run``), closed when it returns."""
    from pydantic_ai.direct import model_request

    def complete(system: str, text: str, max_tokens: int) -> str:
        request = ModelRequest(parts=[SystemPromptPart(system), UserPromptPart(text)])
        settings: Any = {"max_tokens": max_tokens}
        response = asyncio.run(model_request(model, [request], model_settings=settings))
        return response.text or ""

    return summarizer_over(complete, **options)


if _Capability is not None:

    class CompactionCapability(_Capability[Any]):  # type: ignore[misc, unused-ignore]
        """Compaction for ``Agent(model, capabilities=[CompactionCapability(compactor)])``.

        Before every model request (``before_model_request``) the history is compacted as
        ``history_processor`` does it, with the request's tool schemas (function and output
        tools) and instructions counted into the budget, and kept as the run's history. A
        refusal for length (``ModelContextWindowExceededError``, or the SDK error it wraps)
        is compacted reactively (``on_model_request_error``) and the request attempted once
        more with the smaller view (``RetryModelRequest``; ``prepare_model_request`` sends
        it); a second refusal, or any other error, propagates.

        Without a ``Compactor``, its settings as keywords (``integrations.options``):
        ``model=`` (its window sets the limit), ``trigger=``, ``keep=``, any policy field,
        ``store=``, ``token_counter=``, ``summary_model=`` (a pydantic-ai model or its name:
        the summarizer, ``model_summarizer``).
        """

        def __init__(self, compactor: Compactor | None = None, **options: Any) -> None:
            self.compactor = given_or_built(compactor, model_summarizer, options)
            self._states = _PerConversation(self.compactor)
            self._last: tuple[Compactor, list[Converted], list[Message], str] | None = None
            self._retry: list[ModelMessage] | None = None
            self._retried = False

        def compactor_for(self, conversation: str | None) -> Compactor:
            """The compactor of a run's ``conversation_id``: the first conversation is
            ``self.compactor``'s session, each other one a session of its own."""
            return compactor_for(self.compactor, conversation)

        async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
            tools = _tool_schemas(request_context.model_request_parameters)
            history = list(request_context.messages)
            key = getattr(ctx, "conversation_id", None) or conversation_id(history)
            state = self._states.get(key)
            converted, dicts, active = state.before(history, tools)
            self._last = (state.compactor, converted, dicts, active)
            self._retry, self._retried = None, False
            # The model's name: one that binds its thinking to its prefix turns the strip on.
            state.compactor.learn_model(getattr(getattr(ctx, "model", None), "model_name", None))
            messages = restore(await state.compactor.aprepare(dicts, active), converted)
            request_context.messages = messages.copy()
            ctx.messages[:] = messages
            return request_context

        async def prepare_model_request(self, ctx: Any, request_context: Any) -> Any:
            if self._retry is not None:
                request_context.messages = self._retry.copy()
            return request_context

        async def on_model_request_error(
            self, ctx: Any, *, request_context: Any, error: Exception
        ) -> Any:
            cause = recoverable(error)
            if isinstance(error, ModelContextWindowExceededError) and cause is None:
                cause = error
            if self._retried or self._last is None or cause is None:
                raise error
            self._retried = True
            integrations_log.debug("pydantic-ai refused, compacting once: %s", error)
            compactor, converted, dicts, active = self._last
            view = await asyncio.to_thread(compactor.recover, cause, dicts, active)
            self._retry = restore(view, converted)
            ctx.messages[:] = self._retry
            raise RetryModelRequest()

        @classmethod
        def get_serialization_name(cls) -> str | None:
            return None  # takes a Compactor: not spec-serializable


__all__ = [
    "CompactionCapability",
    "conversation_id",
    "history_processor",
    "latest_request",
    "model_summarizer",
    "restore",
    "sync_history_processor",
    "to_dict",
]
