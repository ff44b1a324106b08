"""A LangChain v1 agent middleware that sends the model a compacted view of the agent's state.

    from langchain.agents import create_agent
    from context_compact.integrations.langchain import CompactionMiddleware

    agent = create_agent(model, tools, middleware=[CompactionMiddleware(compactor)])

``CompactionMiddleware`` wraps every model call (``wrap_model_call``, and
``awrap_model_call`` for ``ainvoke``/``astream``): it converts the request's messages to
canonical dicts, lets the compactor decide the view and sends the view instead. The graph
state is never rewritten: ``state["messages"]`` keeps the whole conversation, every tool
output in full, and the compactor's store keeps the copy that the view names (so both the
framework and the model can reach anything that left the view). LangChain's own
``SummarizationMiddleware`` instead replaces the state's messages with its summary
(``RemoveMessage(REMOVE_ALL_MESSAGES)``), and issue 11 reports releases of it leaving a
``ToolMessage`` whose ``AIMessage`` was summarized away; here every view passes ``check()``: a
tool call and its results stay together or leave together, and bad input is refused
(``InvalidHistory``), never repaired.

Conversion (LangChain -> canonical): ``HumanMessage`` -> a user message; ``AIMessage`` -> an
assistant message whose ``tool_calls`` become ``tool_use`` blocks (its text, thinking and
other blocks kept); the ``ToolMessage`` run after it -> one user message of ``tool_result``
blocks (``status="error"`` as ``is_error``); leading ``SystemMessage`` s are set aside and
sent first, unchanged; a later one is a user turn. Back: every message the compactor left
alone is the original object; a result it replaced is the original ``ToolMessage`` with new
content; a summary is a new ``HumanMessage``. The API's ``usage_metadata`` calibrates the
budget, and a refusal for length (``is_context_overflow``) is compacted and retried once, as
is a refused thinking block (its thinking leaves the view: ``Compactor.recover``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

from ..errors import MissingExtra

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        HumanMessage,
        SystemMessage,
        ToolCall,
        ToolMessage,
    )
except ImportError as error:  # pragma: no cover - the message is the point
    raise MissingExtra(
        "context_compact.integrations.langchain", "LangChain v1", "langchain", "langchain"
    ) from error

from ..compactor import Compactor
from ..invariants import InvalidHistory, Violation
from ..messages import Block, Message, ToolResultBlock, block_type, blocks, is_result, is_tool_use
from ..providers.thinking import recoverable
from ._bridge import Converted, Origins, Units, origins_of, results_in, text_of
from .conversations import Conversations, compactor_for
from .options import given_or_built, model_summarizer

TOOL_CALL_BLOCKS = ("tool_use", "tool_call")


def _content(content: Any) -> Any:
    if isinstance(content, list):
        return [{"type": "text", "text": p} if isinstance(p, str) else p for p in content]
    return content


def _result(message: ToolMessage) -> ToolResultBlock:
    block: ToolResultBlock = {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": _content(message.content),
    }
    if message.status == "error":
        block["is_error"] = True
    return block


def _assistant(message: AIMessage) -> Message:
    content = message.content
    if isinstance(content, str):
        kept: list[Any] = [{"type": "text", "text": content}] if content else []
    else:
        kept = [b for b in _content(content) if block_type(b) not in TOOL_CALL_BLOCKS]
    uses = [
        {"type": "tool_use", "id": call["id"], "name": call["name"], "input": call["args"]}
        for call in message.tool_calls
    ]
    if isinstance(content, str) and not uses:
        return {"role": "assistant", "content": content}
    return {"role": "assistant", "content": kept + uses}


def to_dict(unit: tuple[BaseMessage, ...]) -> Message:
    """One unit (a message, or the run of ToolMessages after an AIMessage) as a canonical dict."""
    first = unit[0]
    if isinstance(first, ToolMessage):
        return {"role": "user", "content": [_result(m) for m in unit]}  # type: ignore[arg-type, unused-ignore]
    if isinstance(first, AIMessage):
        return _assistant(first)
    if isinstance(first, SystemMessage):
        return {"role": "user", "content": [{"type": "text", "text": text_of(first.content)}]}
    return {"role": "user", "content": _content(first.content)}


def split(
    messages: Sequence[BaseMessage],
) -> tuple[list[BaseMessage], list[tuple[BaseMessage, ...]]]:
    """Leading system messages, then the units that become one dict each."""
    lead = 0
    while lead < len(messages) and isinstance(messages[lead], SystemMessage):
        lead += 1
    units: list[tuple[BaseMessage, ...]] = []
    for i, message in enumerate(messages[lead:], lead):
        if not isinstance(message, (HumanMessage, AIMessage, ToolMessage, SystemMessage)):
            detail = f"{type(message).__name__} is not supported; use Human/AI/Tool/SystemMessage"
            raise InvalidHistory([Violation(i, "malformed", detail)], "LangChain messages")
        if isinstance(message, ToolMessage) and units and isinstance(units[-1][0], ToolMessage):
            units[-1] = (*units[-1], message)
        else:
            units.append((message,))
    return list(messages[:lead]), units


def restore(view: list[Message], converted: list[Converted]) -> list[BaseMessage]:
    """The view as LangChain messages: originals where unchanged (see the module docstring)."""
    origins: Origins = origins_of(converted)
    for item in converted:
        if isinstance(item.unit[0], ToolMessage):
            for message, block in zip(item.unit, blocks(item.message), strict=True):
                if is_result(block):  # each message of a tool unit is one result
                    origins.add_result(block, message)
    out: list[BaseMessage] = []
    for message in view:
        origin = origins.take(message)
        if origin is not None:
            out.extend(origin)
        elif message["role"] == "assistant":
            out.append(_new_assistant(message))
        else:
            out.extend(_new_user(message, origins))
    return out


def _new_user(message: Message, origins: Origins) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for block in results_in(message):
        known = origins.result(block["tool_use_id"])
        if known is None:
            out.append(
                ToolMessage(
                    content=_lc(block.get("content", "")), tool_call_id=block["tool_use_id"]
                )
            )
        elif known[0] == block:
            out.append(known[1])
        else:
            out.append(known[1].model_copy(update={"content": block.get("content", "")}))
    rest = [b for b in blocks(message) if block_type(b) != "tool_result"]
    if isinstance(message["content"], str):
        out.append(HumanMessage(content=message["content"]))
    elif rest:
        out.append(HumanMessage(content=_lc(rest)))
    return out


def _new_assistant(message: Message) -> AIMessage:
    if isinstance(message["content"], str):
        return AIMessage(content=message["content"])
    calls: list[ToolCall] = [
        {"id": b["id"], "name": b["name"], "args": b.get("input", {}), "type": "tool_call"}
        for b in blocks(message)
        if is_tool_use(b)
    ]
    kept = [b for b in blocks(message) if block_type(b) != "tool_use"]
    return AIMessage(content=_lc(kept), tool_calls=calls)


def _lc(content: str | list[Block] | None) -> str | list[str | dict[Any, Any]]:
    """Our content as LangChain types it: a block is a plain dict at runtime."""
    return cast("str | list[str | dict[Any, Any]]", content)


def latest_request(messages: Sequence[BaseMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return text_of(message.content)
    return ""


def _input_tokens(response: Any) -> int:
    result = getattr(response, "model_response", response)
    result = getattr(result, "result", [result])
    for message in result:
        usage = getattr(message, "usage_metadata", None)
        if usage and isinstance(usage.get("input_tokens"), int):
            return int(usage["input_tokens"])
    return 0


def chat_model_summarizer(model: Any, **options: Any) -> Any:
    """An ``LLMSummarizer`` asking a LangChain chat model (an instance, or a name for
    ``init_chat_model``) for each summary: the agent's own model as its summarizer."""
    if isinstance(model, str):
        from langchain.chat_models import init_chat_model

        model = init_chat_model(model)

    def complete(system: str, text: str, max_tokens: int) -> str:
        return str(model.invoke([SystemMessage(system), HumanMessage(text)]).text)

    return model_summarizer(complete, **options)


def thread_id() -> str | None:
    """The ``thread_id`` of the graph run this is called in (None outside one, or without)."""
    try:
        from langgraph.config import get_config

        configurable = get_config().get("configurable") or {}
    except (ImportError, RuntimeError):
        return None
    found = configurable.get("thread_id")
    return None if found is None else str(found)


class CompactionMiddleware(AgentMiddleware):  # type: ignore[misc, unused-ignore]
    """Send the model the compactor's view of the agent's messages; keep the state whole.

    ``CompactionMiddleware(compactor)``, or the compactor's settings as keywords, by
    LangChain's ``SummarizationMiddleware`` names where they differ (``integrations.options``):
    ``model=`` (its window sets the limit), ``trigger=``, ``keep=``, ``summary_prompt=``,
    ``token_counter=``, ``summary_model=`` (a chat model or its name: the summarizer), and
    any policy field (``exclude_tools=``, ``keep_recent_tool_uses=``...), ``store=``.

    Each ``thread_id`` is its own session. Given ``Conversations``, ``conversations.get(
    thread_id)`` (a run without one is the conversation ``default``); given one compactor,
    the first thread it serves is its session and each other thread gets a compactor of the
    same settings on a session of its own (``conversations.compactor_for``; a run without a
    thread_id is one conversation too). ``compactor_for(thread_id)`` is a thread's compactor
    (its ``recall``, its ``session_id``).
    """

    compactor: Compactor

    def __init__(self, compactor: Compactor | Conversations | None = None, **options: Any) -> None:
        super().__init__()
        self.conversations = compactor if isinstance(compactor, Conversations) else None
        if self.conversations is None:
            self.compactor = given_or_built(
                compactor if isinstance(compactor, Compactor) else None,
                chat_model_summarizer,
                options,
            )
        elif options:
            raise TypeError(
                "CompactionMiddleware(Conversations(...)) takes no settings: give them to "
                "the Conversations' factory"
            )
        self._threads: dict[str | None, CompactionMiddleware] = {}
        self._units = Units()
        self._fixed: tuple[str, str] | None = None

    def compactor_for(self, thread: str | None) -> Compactor:
        """The compactor of the conversation ``thread`` (a ``thread_id``, or None for runs
        without one): its session, its ``recall``."""
        if self.conversations is not None:
            return self.conversations.get(thread or "default")
        return compactor_for(self.compactor, thread)

    def _thread(self) -> CompactionMiddleware | None:
        """The middleware of this run's conversation (None: this one's own compactor)."""
        key = thread_id()
        compactor = self.compactor_for(key)
        if self.conversations is None and compactor is self.compactor:
            return None
        found = self._threads.get(key)
        if found is None or found.compactor is not compactor:
            found = self._threads[key] = CompactionMiddleware(compactor)
        return found

    def _prepare(self, request: ModelRequest) -> tuple[list[Any], list[Converted], str, Any]:
        self._count_fixed(request)
        # The chat model's name (ChatAnthropic's ``model``): one that binds its thinking to
        # its prefix turns on the strip of voided thinking before the first compaction.
        chat = request.model
        self.compactor.learn_model(
            getattr(chat, "model", None) or getattr(chat, "model_name", None)
        )
        lead, units = split(request.messages)
        converted = self._units.convert(units, to_dict)
        return lead, converted, latest_request(request.messages), [c.message for c in converted]

    def _count_fixed(self, request: ModelRequest) -> None:
        """Count the system prompt and tool schemas into the budget (again only on change)."""
        system = request.system_prompt or ""
        names = json.dumps([getattr(t, "name", None) or str(t) for t in request.tools])
        if self._fixed == (system, names):
            return
        from langchain_core.utils.function_calling import convert_to_openai_tool

        self._fixed = (system, names)
        self.compactor.set_request(system, [convert_to_openai_tool(t) for t in request.tools])

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> Any:
        thread = self._thread()
        if thread is not None:
            return thread.wrap_model_call(request, handler)
        lead, converted, active, dicts = self._prepare(request)
        view = self.compactor.prepare(dicts, active)
        try:
            response = handler(request.override(messages=lead + restore(view, converted)))
        except Exception as error:
            if recoverable(error) is None:
                raise
            view = self.compactor.recover(error, dicts, active)
            response = handler(request.override(messages=lead + restore(view, converted)))
        self.compactor.observe(_input_tokens(response))
        return response

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> Any:
        thread = self._thread()
        if thread is not None:
            return await thread.awrap_model_call(request, handler)
        lead, converted, active, dicts = self._prepare(request)
        view = await self.compactor.aprepare(dicts, active)
        try:
            response = await handler(request.override(messages=lead + restore(view, converted)))
        except Exception as error:
            if recoverable(error) is None:
                raise
            view = await asyncio.to_thread(self.compactor.recover, error, dicts, active)
            response = await handler(request.override(messages=lead + restore(view, converted)))
        self.compactor.observe(_input_tokens(response))
        return response


__all__ = [
    "CompactionMiddleware",
    "chat_model_summarizer",
    "latest_request",
    "restore",
    "split",
    "thread_id",
    "to_dict",
]
