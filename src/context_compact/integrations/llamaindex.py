"""A LlamaIndex ``FunctionAgent`` that compacts every model call inside one run's tool loop.

    from context_compact.integrations.llamaindex import CompactingFunctionAgent

    agent = CompactingFunctionAgent(tools=[...], llm=llm, compactor=compactor)
    response = await agent.run(user_msg="...")

``FunctionAgent`` sends the model the run's memory plus its in-run scratchpad on every step,
and only its ``Memory`` is trimmed (between runs): the scratchpad of one long tool loop grows
until the model refuses it. ``CompactingFunctionAgent`` overrides the call (``_get_response``
and ``_get_streaming_response``, the two places ``take_step`` asks the LLM): the messages go
through the compactor and the model is sent its view. The scratchpad in ``ctx.store`` and the
memory are never rewritten: they keep every message whole, and the compactor's store keeps
what the view names, so nothing is lost (``recall``).

Conversion: leading system messages are set aside and sent first, unchanged; a user message
is a user message; an assistant message is its text plus a ``tool_use`` block per tool call
(read by the LLM's own ``get_tool_calls_from_response``); the run of ``tool`` messages after
it is one user message of ``tool_result`` blocks (``additional_kwargs["tool_call_id"]``).
Back: every message the compactor left alone is the original object (thinking blocks and
``additional_kwargs`` unchanged); a result it replaced is the original with new text; a
summary is a new user message.

One session per conversation: the key is kept in the run's ``ctx.store`` (the step context
is new each step, the store is the run's), taken from the memory's ``session_id`` when the
run has one (a ``Memory`` passed to ``agent.run(memory=...)`` continues its session across
runs), a new id otherwise. Given a ``Compactor``, the first conversation is its session and
each other one a compactor of the same settings (``conversations.compactor_for``); given
``Conversations``, ``conversations.get(key)``; or ``compactor_store=`` and
``compaction_policy=``. The response's usage calibrates the budget; a refusal for length or of
a thinking block is recovered (``Compactor.recover``) and the call made once more.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

from ..errors import MissingExtra

try:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ChatResponse
    from llama_index.core.bridge.pydantic import Field
    from llama_index.core.llms import ChatMessage, MessageRole, TextBlock
except ImportError as error:  # pragma: no cover - the message is the point
    raise MissingExtra(
        "context_compact.integrations.llamaindex",
        "LlamaIndex",
        "llamaindex",
        "llama-index-core",
    ) from error

from ..compactor import Compactor
from ..messages import Block, Message, block_type, blocks, is_result
from ..policy import Policy
from ..providers.thinking import recoverable
from ._bridge import Converted, Origins, Units, origins_of, results_in, text_of
from .conversations import Conversations, compactor_for

KEY = "context_compact_conversation"
_conversation: ContextVar[str | None] = ContextVar("context_compact_llamaindex", default=None)


def _role(message: Any) -> str:
    return str(getattr(message.role, "value", message.role))


def _text(message: Any) -> str:
    return str(message.content or "")


def _units(messages: Sequence[Any]) -> tuple[list[Any], list[tuple[Any, ...]]]:
    lead = 0
    while lead < len(messages) and _role(messages[lead]) == "system":
        lead += 1
    units: list[tuple[Any, ...]] = []
    for message in messages[lead:]:
        if _role(message) == "tool" and units and _role(units[-1][0]) == "tool":
            units[-1] = (*units[-1], message)
        else:
            units.append((message,))
    return list(messages[:lead]), units


class _Convert:
    """LlamaIndex messages <-> canonical dicts, with the LLM that reads tool calls."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    def calls(self, message: Any) -> list[Any]:
        read = getattr(self.llm, "get_tool_calls_from_response", None)
        if read is None:
            return []
        return list(read(ChatResponse(message=message), error_on_no_tool_call=False) or [])

    def to_dict(self, unit: tuple[Any, ...]) -> Message:
        first = unit[0]
        role = _role(first)
        if role == "tool":
            results: list[Block] = [
                {
                    "type": "tool_result",
                    "tool_use_id": str(m.additional_kwargs.get("tool_call_id", "")),
                    "content": _text(m),
                }
                for m in unit
            ]
            return {"role": "user", "content": results}
        if role == "assistant":
            uses: list[Block] = [
                {"type": "tool_use", "id": c.tool_id, "name": c.tool_name, "input": c.tool_kwargs}
                for c in self.calls(first)
            ]
            text = _text(first)
            if not uses:
                return {"role": "assistant", "content": text}
            head: list[Block] = [{"type": "text", "text": text}] if text else []
            return {"role": "assistant", "content": [*head, *uses]}
        return {"role": "user", "content": _text(first)}


def restore(view: list[Message], converted: list[Converted]) -> list[Any]:
    """The view as LlamaIndex messages: originals where unchanged (see the module docstring)."""
    origins: Origins = origins_of(converted)
    for item in converted:
        if _role(item.unit[0]) == "tool":
            for message, block in zip(item.unit, blocks(item.message), strict=True):
                if is_result(block):  # each message of a tool unit is one result
                    origins.add_result(block, message)
    out: list[Any] = []
    for message in view:
        origin = origins.take(message)
        if origin is not None:
            out.extend(origin)
            continue
        for block in results_in(message):
            known = origins.result(block["tool_use_id"])
            text = text_of(block.get("content", ""))
            if known is None:
                tool_id = {"tool_call_id": block["tool_use_id"]}
                out.append(
                    ChatMessage(role=MessageRole.TOOL, content=text, additional_kwargs=tool_id)
                )
            elif known[0] == block:
                out.append(known[1])
            else:
                out.append(known[1].model_copy(update={"blocks": [TextBlock(text=text)]}))
        rest = [b for b in blocks(message) if block_type(b) not in ("tool_result", "tool_use")]
        if isinstance(message["content"], str) or (rest and not results_in(message)):
            role = MessageRole.ASSISTANT if message["role"] == "assistant" else MessageRole.USER
            out.append(ChatMessage(role=role, content=text_of(message["content"])))
    return out


def _latest_request(messages: Sequence[Any]) -> str:
    for message in reversed(messages):
        if _role(message) == "user":
            return _text(message)
    return ""


def _input_tokens(response: Any) -> Any:
    raw = getattr(response, "raw", None)
    usage = raw.get("usage") if isinstance(raw, dict) else getattr(raw, "usage", None)
    if usage is not None:
        return usage
    return getattr(response, "additional_kwargs", {}).get("prompt_tokens")


class CompactingFunctionAgent(FunctionAgent):  # type: ignore[misc, unused-ignore]
    """A ``FunctionAgent`` sending the model the compactor's view at every step of a run."""

    compactor: Any = Field(default=None, exclude=True, description="A Compactor or Conversations.")
    compactor_store: Any = Field(default=None, exclude=True)
    compaction_policy: Any = Field(default=None, exclude=True)

    def model_post_init(self, context: Any) -> None:
        super().model_post_init(context)
        if self.compactor is None:
            if self.compactor_store is None:
                raise TypeError(
                    "CompactingFunctionAgent needs compactor= (a Compactor or Conversations) "
                    "or compactor_store= (with compaction_policy=)"
                )
            policy = self.compaction_policy or Policy.default()
            self.compactor = Conversations(policy, self.compactor_store)
        elif not isinstance(self.compactor, Compactor | Conversations):
            got = type(self.compactor).__name__
            raise TypeError(f"compactor= must be a Compactor or Conversations, got {got}")

    def compactor_for(self, key: str) -> Compactor:
        """The compactor of conversation ``key`` (its session, its ``recall``)."""
        if isinstance(self.compactor, Conversations):
            return self.compactor.get(key)
        return compactor_for(self.compactor, key)

    async def take_step(self, ctx: Any, llm_input: Any, tools: Any, memory: Any) -> Any:
        key = await ctx.store.get(KEY, default=None)
        if key is None:
            session = getattr(memory, "session_id", None)
            key = session if isinstance(session, str) and session else uuid.uuid4().hex
            await ctx.store.set(KEY, key)
        token = _conversation.set(key)
        try:
            return await super().take_step(ctx, llm_input, tools, memory)
        finally:
            _conversation.reset(token)

    def _compactor(self, tools: Sequence[Any]) -> tuple[Compactor, _Convert]:
        key = _conversation.get() or "default"
        compactor = self.compactor_for(key)
        compactor.learn_model(getattr(getattr(self.llm, "metadata", None), "model_name", None))
        schemas = [t.metadata.to_openai_tool() for t in tools if hasattr(t, "metadata")]
        compactor.set_request(None, schemas)
        return compactor, _Convert(self.llm)

    async def _send(self, messages: list[Any], tools: Sequence[Any], call: Any) -> Any:
        compactor, convert = self._compactor(tools)
        lead, units = _units(messages)
        converted = Units().convert(units, convert.to_dict)
        dicts = [c.message for c in converted]
        active = _latest_request(messages)
        view = await compactor.aprepare(dicts, active)
        try:
            response = await call(lead + restore(view, converted))
        except Exception as error:
            cause = recoverable(error)
            if cause is None:
                raise
            view = await asyncio.to_thread(compactor.recover, cause, dicts, active)
            response = await call(lead + restore(view, converted))
        usage = _input_tokens(response)
        if usage is not None:
            compactor.observe(usage)
        return response

    async def _get_response(self, current_llm_input: list[Any], tools: Sequence[Any]) -> Any:
        parent = super()._get_response

        async def call(messages: list[Any]) -> Any:
            return await parent(messages, tools)

        return await self._send(current_llm_input, tools, call)

    async def _get_streaming_response(
        self, ctx: Any, current_llm_input: list[Any], tools: Sequence[Any]
    ) -> Any:
        parent = super()._get_streaming_response

        async def call(messages: list[Any]) -> Any:
            return await parent(ctx, messages, tools)

        return await self._send(current_llm_input, tools, call)


__all__ = ["CompactingFunctionAgent", "restore"]
