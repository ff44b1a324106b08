"""A Google ADK plugin that sends the model the compactor's view at every model call.

    from google.adk.apps import App
    from context_compact.integrations.adk import CompactionPlugin

    app = App(name="my_app", root_agent=agent,
              plugins=[CompactionPlugin(store, policy=Policy.default(model="gemini-3-pro"))])

ADK rebuilds ``llm_request.contents`` from the session's events before every model call,
inside one invocation's tool loop too, so an invocation of many tool calls sends them all
each time. ``before_model_callback`` converts those contents (google.genai ``Content`` /
``Part``: ``adk_convert``) to canonical messages, lets the compactor decide the view, and
writes the view back into ``llm_request.contents`` as ``Content`` objects: the originals
where the compactor kept them, a result it replaced rebuilt from its original part with only
the response changed. The session's events are never touched: ADK's session keeps every event
whole, the compactor's store keeps what the view names (``recall``), so nothing is lost. The
system instruction and the tools' declarations count against the window (``set_request``).

One session per conversation, keyed by ADK's session id (``callback_context.session.id``):
two ADK sessions, run at once or not, are two compactor sessions. An agent below the root
(a sub-agent) sees its own contents of the same ADK session, so it is a conversation of its
own, keyed ``<session id>/<agent name>``. Given a ``Compactor``, the first conversation is its
session and each other one a compactor of the same settings (``conversations.compactor_for``);
given ``Conversations``, ``conversations.get(key)``; given a store, ``Conversations(policy,
store)``.

Usage: each final response's ``usage_metadata.prompt_token_count`` (``after_model_callback``)
calibrates the conversation's compactor. A refusal for length or of a thinking block reaches
``on_model_error_callback``: the view is recovered (``Compactor.recover``), written into the
same request, and the agent's model asked once more; its answer is the call's response. Any
other error, or a retry that fails too, reaches ADK as it would without the plugin.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import Any

from ..errors import MissingExtra

try:
    from google.adk.plugins.base_plugin import BasePlugin
except ImportError as error:  # pragma: no cover - the message is the point
    raise MissingExtra(
        "context_compact.integrations.adk", "Google ADK", "adk", "google-adk"
    ) from error

from ..compactor import Compactor
from ..messages import Message
from ..providers.thinking import recoverable
from ..store import Store
from ..telemetry import integrations_log
from ._bridge import Converted
from .adk_convert import Converter, latest_request, restore
from .conversations import Conversations, compactor_for, taken

CANONICAL = "anthropic"


def conversation_key(callback_context: Any) -> str:
    """The conversation of a model call: the ADK session's id, with the agent's name for an
    agent below the root (see the module docstring)."""
    session = str(callback_context.session.id)
    agent = getattr(callback_context._invocation_context, "agent", None)
    if agent is None or getattr(agent, "parent_agent", None) is None:
        return session
    return f"{session}/{agent.name}"


def _model_name(model: Any) -> str | None:
    """``openai/gpt-5`` as the provider names it: what ``learn_model`` knows."""
    return model.rsplit("/", 1)[-1] if isinstance(model, str) else None


def _system(config: Any) -> str | None:
    instruction = getattr(config, "system_instruction", None)
    if instruction is None or isinstance(instruction, str):
        return instruction
    parts = getattr(instruction, "parts", None)
    if parts is not None:
        return "\n".join(p.text for p in parts if p.text)
    return str(instruction)


def _tools(config: Any) -> list[Any] | None:
    tools = getattr(config, "tools", None)
    if not tools:
        return None
    return [
        t.model_dump(mode="json", exclude_none=True) if hasattr(t, "model_dump") else repr(t)
        for t in tools
    ]


@dataclass
class _Call:
    """A model call the plugin compacted: what a recovery needs."""

    compactor: Compactor
    request: Any
    messages: list[Message]
    active: str
    converted: list[Converted]
    converter: Converter


class CompactionPlugin(BasePlugin):  # type: ignore[misc, unused-ignore]
    """Compact every model call of an ADK app (see the module docstring).

    ``CompactionPlugin(compactor)``, ``CompactionPlugin(conversations)``, or
    ``CompactionPlugin(store, policy=..., summarizer=..., token_counter=...)``.
    """

    def __init__(
        self,
        compactor: Compactor | Conversations | Store | None = None,
        *,
        policy: Any = None,
        name: str = "context_compact",
        **options: Any,
    ) -> None:
        super().__init__(name)
        self.compactor: Compactor | None
        self.conversations: Conversations | None
        self.compactor, self.conversations = taken(
            compactor, policy, options, "CompactionPlugin", CANONICAL
        )
        self._calls: dict[str, _Call] = {}
        self._lock = threading.Lock()

    def compactor_for(self, key: str) -> Compactor:
        """The compactor of conversation ``key`` (an ADK session id; its ``recall``)."""
        if self.conversations is not None:
            found = self.conversations.get(key)
        else:
            assert self.compactor is not None
            found = compactor_for(self.compactor, key)
        if found.format == "auto":
            found.format = CANONICAL
        elif found.format != CANONICAL:
            raise ValueError(
                f"CompactionPlugin: this compactor holds a {found.format!r} conversation; "
                "the plugin sends it canonical (Anthropic-shaped) messages: give it a "
                "Compactor of its own"
            )
        return found

    async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> None:
        key = conversation_key(callback_context)
        compactor = self.compactor_for(key)
        compactor.learn_model(_model_name(llm_request.model))
        compactor.set_request(_system(llm_request.config), _tools(llm_request.config))
        converter = Converter()
        converted = converter.convert(llm_request.contents)
        messages = [item.message for item in converted]
        active = latest_request(llm_request.contents)
        view = await compactor.aprepare(messages, active)
        llm_request.contents = restore(view, converted, converter)
        with self._lock:
            self._calls[key] = _Call(compactor, llm_request, messages, active, converted, converter)

    async def after_model_callback(self, *, callback_context: Any, llm_response: Any) -> None:
        if llm_response.partial:
            return
        key = conversation_key(callback_context)
        with self._lock:
            call = self._calls.pop(key, None)
        usage = llm_response.usage_metadata
        tokens = getattr(usage, "prompt_token_count", None)
        if call is not None and isinstance(tokens, int) and tokens > 0:
            call.compactor.observe(tokens)

    async def on_model_error_callback(
        self, *, callback_context: Any, llm_request: Any, error: Exception
    ) -> Any:
        cause = recoverable(error)
        key = conversation_key(callback_context)
        with self._lock:
            call = self._calls.get(key)
        if cause is None or call is None or call.request is not llm_request:
            return None
        integrations_log.debug("adk: the model refused the request, recovering once: %s", cause)
        view = await asyncio.to_thread(call.compactor.recover, cause, call.messages, call.active)
        llm_request.contents = restore(view, call.converted, call.converter)
        model = await _model(callback_context)
        responses = [r async for r in model.generate_content_async(llm_request, stream=False)]
        return responses[-1] if responses else None


async def _model(callback_context: Any) -> Any:
    """The model of the agent whose call failed, as ADK's flow resolves it."""
    agent = callback_context._invocation_context.agent
    if hasattr(agent, "canonical_model_async"):
        return await agent.canonical_model_async(callback_context)
    return agent.canonical_model


__all__ = ["CompactionPlugin", "conversation_key"]
