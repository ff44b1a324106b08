"""A LiteLLM callback that compacts every chat request: one hook for the SDK and the proxy.

    import litellm
    from context_compact.integrations.litellm import CompactionHook

    hook = CompactionHook(store, policy=Policy.default(model="claude-sonnet-5-5"))
    litellm.callbacks = [hook]
    response = await litellm.acompletion(model=..., messages=messages, tools=tools,
                                         litellm_session_id="user-42")
    completion = hook.wrap(litellm.completion)     # the sync SDK path (and acompletion's retry)

and, on a proxy, ``litellm_settings: {callbacks: my_module.hook}`` in its ``config.yaml``.

Where it rewrites: ``async_pre_call_deployment_hook``, which LiteLLM runs for
``litellm.acompletion`` and for every request a proxy routes (after its own
``async_pre_call_hook``, which this hook leaves alone: one rewrite per request). Two routes
carry messages: chat completions (``completion``/``acompletion``: OpenAI chat messages, dicts
or LiteLLM's ``Message`` objects) and the proxy's ``/v1/messages`` (``anthropic_messages``:
Anthropic messages, their ``system`` and ``tools`` counted). The request's ``messages`` become
the compactor's view in the same format: assistant fields the view keeps (``thinking_blocks``,
``reasoning_content``, ``provider_specific_fields``) pass through unchanged, and a tool call
and its results stay together or leave together. A call LiteLLM makes inside another of the
same request (``/v1/messages`` to a model it reaches by chat completions goes on as
``acompletion``, its logging object still naming the outer route) passes through: the outer
call, in the client's format, was compacted. The caller's list is never modified. No
LiteLLM hook can rewrite what a sync ``litellm.completion`` sends, so that path is
``hook.wrap(litellm.completion)``; ``wrap`` works for ``acompletion`` too, and a wrapped
call's request is not rewritten a second time by the hook.

One session per conversation, in one format (a key sent on both routes is refused). The key
is LiteLLM's own session id (``litellm_session_id``, the proxy's ``x-litellm-session-id``
header or ``metadata["session_id"]``); without one, the conversation's first tool-call id
(OpenAI ``tool_calls`` or Anthropic ``tool_use``, unique per provider): conversations behind
a proxy often open with the same messages, so the opening is never a key. A request with
neither (no session id, no tool call yet) goes out untouched: it is the opening of a
conversation, with nothing to compact. Given a ``Compactor``, the first conversation is its
session and each other one a compactor of the same settings (``conversations.compactor_for``);
given ``Conversations``, ``conversations.get(key)``; given a store, ``Conversations(policy,
store)``, each conversation taking the format of its first request.

Usage: the response as the deployment returns it (``async_post_call_success_deployment_hook``;
a stream's last chunk, with ``stream_options={"include_usage": True}``, in
``async_post_call_streaming_deployment_hook``; ``wrap``'s own response or stream, and a
proxy's stream in ``async_post_call_streaming_iterator_hook``: a ``/v1/messages`` stream is
relayed as raw events, read by ``relayed.EventUsage``), and the success
callbacks (``log_success_event``, the proxy's ``async_post_call_success_hook``) calibrate the
compactor that prepared that call (by ``litellm_call_id``), only while it is the
conversation's newest call: LiteLLM runs its logging callbacks in the background, and a late
one must not calibrate the next request. Refusals: a
refusal for length or of a thinking block (``Compactor.recover``) is retried once by
``wrap``; through the hook alone (a proxy), the failure is remembered and the
conversation's next request is the recovered one (a client's retry, or the router's
``context_window_fallbacks`` to the same model).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
import uuid
import weakref
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, MissingExtra

try:
    from litellm.integrations.custom_logger import CustomLogger
except ImportError as error:  # pragma: no cover - the message is the point
    raise MissingExtra(
        "context_compact.integrations.litellm", "LiteLLM", "litellm", "litellm"
    ) from error

from ..compactor import Compactor
from ..messages import plain
from ..providers.thinking import recoverable
from ..store import Store
from ..telemetry import integrations_log
from .clients import latest_request
from .conversations import Conversations, compactor_for, taken
from .relayed import EventUsage
from .streams import watch

CHAT = "openai-chat"
ANTHROPIC = "anthropic"
# The call types whose ``messages`` the hook compacts, and the format they carry.
_ROUTES = {
    "completion": CHAT,
    "acompletion": CHAT,
    "anthropic_messages": ANTHROPIC,
    "aanthropic_messages": ANTHROPIC,
}
# Set while ``wrap`` sends a request it compacted itself: the hook passes that one through.
_WRAPPED: ContextVar[bool] = ContextVar("context_compact_litellm_wrapped", default=False)


def _field(item: Any, name: str) -> Any:
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


def conversation_key(data: Mapping[str, Any]) -> str | None:
    """The conversation a request belongs to: LiteLLM's session id, else ``tool-call-<id>`` of
    its first tool call, else None (see the module docstring)."""
    found = [
        data.get("litellm_session_id"),
        _field(data.get("metadata"), "session_id"),
        _field(data.get("litellm_metadata"), "session_id"),
        _field(data.get("litellm_logging_obj"), "litellm_session_id"),
    ]
    for value in found:
        if isinstance(value, str) and value:
            return value
    messages = data.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if _field(message, "role") != "assistant":
            continue
        content = _field(message, "content")
        blocks = content if isinstance(content, list) else []
        # OpenAI's ``tool_calls``, or the Anthropic ``tool_use`` blocks of /v1/messages.
        calls = _field(message, "tool_calls") or [
            b for b in blocks if _field(b, "type") == "tool_use"
        ]
        call_id = _field(calls[0], "id") if calls else None
        if isinstance(call_id, str) and call_id:
            return f"tool-call-{call_id}"
    return None


def _model_name(model: Any) -> str | None:
    """``anthropic/claude-...`` as the provider names it: what ``learn_model`` knows."""
    return model.rsplit("/", 1)[-1] if isinstance(model, str) else None


def _nested(data: Mapping[str, Any], format: str) -> bool:
    """A call LiteLLM makes inside another one of the same request (a /v1/messages request
    to a model served by chat completions goes on as ``acompletion``): the outer call, in
    the client's own format, was the one compacted."""
    outer = _field(data.get("litellm_logging_obj"), "call_type")
    route = _ROUTES.get(str(getattr(outer, "value", outer)))
    return route is not None and route != format


def _tools(tools: Any) -> list[Any] | None:
    return [plain(t) for t in tools] if isinstance(tools, list) else None


def _system(system: Any) -> str | None:
    """An Anthropic request's ``system``, a string or text blocks, as the text it counts."""
    if isinstance(system, list):
        return "\n".join(str(_field(b, "text") or "") for b in system)
    return system if isinstance(system, str) else None


class _State:
    """What the hook keeps per compactor: its newest call, a refusal to recover next."""

    def __init__(self) -> None:
        self.newest: str | None = None
        self.refused: BaseException | None = None
        self.request = ""


@dataclass
class _Call:
    compactor: Compactor
    state: _State
    messages: list[Any]
    request: str


class CompactionHook(CustomLogger):  # type: ignore[misc, unused-ignore]
    """Compact each chat request LiteLLM sends (see the module docstring).

    ``CompactionHook(compactor)``, ``CompactionHook(conversations)``, or
    ``CompactionHook(store, policy=..., summarizer=..., token_counter=...)``.
    """

    def __init__(
        self,
        compactor: Compactor | Conversations | Store | None = None,
        *,
        policy: Any = None,
        **options: Any,
    ) -> None:
        super().__init__()
        self.compactor: Compactor | None
        self.conversations: Conversations | None
        self.compactor, self.conversations = taken(
            compactor, policy, options, "CompactionHook", "auto"
        )
        self._states: weakref.WeakKeyDictionary[Compactor, _State] = weakref.WeakKeyDictionary()
        self._calls: OrderedDict[str, Compactor] = OrderedDict()
        self._lock = threading.Lock()

    def compactor_for(self, key: str, format: str = CHAT) -> Compactor:
        """The compactor of conversation ``key`` (a session id, or ``tool-call-<id>``), whose
        requests carry ``format`` (OpenAI chat, or Anthropic on a proxy's /v1/messages)."""
        if self.conversations is not None:
            found = self.conversations.get(key)
        else:
            assert self.compactor is not None
            found = compactor_for(self.compactor, key)
        if found.format == "auto":
            found.format = format
        elif found.format != format:
            raise ConfigError(
                f"CompactionHook: conversation {key!r} holds {found.format!r} messages and this "
                f"request sends {format!r} ones: give each route a session id of its own"
            )
        return found

    # -- the steps ------------------------------------------------------------------------
    def _plan(self, data: dict[str, Any], format: str = CHAT) -> _Call | None:
        """The conversation of a request and what to compact, or None (pass it on)."""
        messages = data.get("messages")
        if not isinstance(messages, list) or not messages:
            return None
        key = conversation_key(data)
        if key is None:
            return None
        compactor = self.compactor_for(key, format)
        compactor.learn_model(_model_name(data.get("model")))
        # A chat list carries its system messages; an Anthropic request its ``system``.
        system = _system(data.get("system")) if format == ANTHROPIC else None
        compactor.set_request(system, _tools(data.get("tools")))
        call_id = data.get("litellm_call_id")
        with self._lock:
            state = self._states.setdefault(compactor, _State())
            if isinstance(call_id, str):
                state.newest = call_id
                self._calls[call_id] = compactor
                while len(self._calls) > 1024:
                    self._calls.popitem(last=False)
        found = latest_request(messages)
        if found is not None:
            state.request = found
        return _Call(compactor, state, messages, state.request)

    def _view(self, call: _Call) -> list[Any]:
        refused, call.state.refused = call.state.refused, None
        if refused is not None:
            integrations_log.debug("litellm: recovering the refusal of the last request")
            return call.compactor.recover(refused, call.messages, call.request)
        return call.compactor.prepare(call.messages, call.request)

    def _observe(self, data: Any, response: Any) -> None:
        self._observe_usage(_field(data, "litellm_call_id"), _field(response, "usage"))

    def _observe_usage(self, call_id: Any, usage: Any) -> None:
        with self._lock:
            compactor = self._calls.get(call_id) if isinstance(call_id, str) else None
            state = self._states.get(compactor) if compactor is not None else None
        # A late callback of an older call would calibrate the wrong request.
        if compactor is None or state is None or state.newest != call_id:
            return
        if usage is not None:
            compactor.observe(usage)

    def _refused(self, data: Any, error: BaseException) -> None:
        cause = recoverable(error)
        call_id = _field(data, "litellm_call_id")
        if cause is None or not isinstance(call_id, str):
            return
        with self._lock:
            compactor = self._calls.get(call_id)
            state = self._states.get(compactor) if compactor is not None else None
        if state is not None and state.newest == call_id:
            state.refused = cause

    # -- LiteLLM's hooks ------------------------------------------------------------------
    async def async_pre_call_deployment_hook(
        self, kwargs: dict[str, Any], call_type: Any
    ) -> dict[str, Any] | None:
        format = _ROUTES.get(str(getattr(call_type, "value", call_type)))
        if _WRAPPED.get() or format is None or _nested(kwargs, format):
            return None
        # LiteLLM logs a finished stream from a task of its own: let a pending one (the
        # previous call's usage) run before this call becomes the conversation's newest.
        await asyncio.sleep(0)
        call = self._plan(kwargs, format)
        if call is None:
            return None
        view = await asyncio.to_thread(self._view, call)
        return {**kwargs, "messages": view}

    async def async_post_call_failure_deployment_hook(
        self,
        request_data: Mapping[str, Any],
        exception: Exception,
        call_type: Any,
        fallback_depth: int | None = None,
    ) -> None:
        if not _WRAPPED.get():
            self._refused(request_data, exception)

    async def async_post_call_success_deployment_hook(
        self, request_data: dict[str, Any], response: Any, call_type: Any
    ) -> Any:
        self._observe(request_data, response)
        return None

    async def async_post_call_streaming_deployment_hook(
        self, request_data: dict[str, Any], response_chunk: Any, call_type: Any
    ) -> Any:
        # The chunk that carries usage (``stream_options={"include_usage": True}``) comes last,
        # as the caller consumes the stream: before its next request is prepared.
        self._observe(request_data, response_chunk)
        return None

    async def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict: Any, response: Any, request_data: dict[str, Any]
    ) -> AsyncGenerator[Any, None]:
        # The proxy's stream, chunk by chunk as its client reads it: a chat stream's last
        # chunk carries usage; a /v1/messages stream is relayed as the API's raw events.
        call_id = _field(request_data, "litellm_call_id")
        events = EventUsage()
        async for chunk in response:
            usage = events.feed(chunk) if isinstance(chunk, bytes | str) else _field(chunk, "usage")
            if usage is not None:
                self._observe_usage(call_id, usage)
            yield chunk

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._observe(kwargs, response_obj)

    def log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._observe(kwargs, response_obj)

    async def async_post_call_success_hook(
        self, data: dict[str, Any], user_api_key_dict: Any, response: Any
    ) -> Any:
        self._observe(data, response)
        return None

    # -- the wrapped call -----------------------------------------------------------------
    def wrap(self, completion: Callable[..., Any]) -> Callable[..., Any]:
        """``litellm.completion`` (or ``acompletion``) compacting its ``messages``, a refusal
        recovered and sent once more, a non-streamed response's usage observed."""
        if inspect.iscoroutinefunction(completion):

            @functools.wraps(completion)
            async def acall(*args: Any, **kwargs: Any) -> Any:
                call = None if args else self._plan(_with_call_id(kwargs))
                if call is None:
                    return await completion(*args, **kwargs)
                token = _WRAPPED.set(True)
                try:
                    view = await asyncio.to_thread(self._view, call)
                    try:
                        response = await completion(**{**kwargs, "messages": view})
                    except Exception as error:
                        cause = recoverable(error)
                        if cause is None:
                            raise
                        view = await asyncio.to_thread(self._recover, call, cause, kwargs)
                        response = await completion(**{**kwargs, "messages": view})
                finally:
                    _WRAPPED.reset(token)
                return self._after(kwargs, response)

            return acall

        @functools.wraps(completion)
        def call_sync(*args: Any, **kwargs: Any) -> Any:
            call = None if args else self._plan(_with_call_id(kwargs))
            if call is None:
                return completion(*args, **kwargs)
            token = _WRAPPED.set(True)
            try:
                view = self._view(call)
                try:
                    response = completion(**{**kwargs, "messages": view})
                except Exception as error:
                    cause = recoverable(error)
                    if cause is None:
                        raise
                    view = self._recover(call, cause, kwargs)
                    response = completion(**{**kwargs, "messages": view})
            finally:
                _WRAPPED.reset(token)
            return self._after(kwargs, response)

        return call_sync

    def _after(self, kwargs: dict[str, Any], response: Any) -> Any:
        """A response's usage observed; a stream's as the caller reads its last chunk."""
        call_id = kwargs["litellm_call_id"]
        if kwargs.get("stream") is True:
            return watch(response, CHAT, lambda usage: self._observe_usage(call_id, usage))
        self._observe_usage(call_id, _field(response, "usage"))
        return response

    def _recover(self, call: _Call, cause: BaseException, kwargs: dict[str, Any]) -> list[Any]:
        integrations_log.debug("litellm refused the request, recovering once: %s", cause)
        view = call.compactor.recover(cause, call.messages, call.request)
        # The retry is a call of its own: its usage is the one to observe.
        call_id = kwargs["litellm_call_id"] = str(uuid.uuid4())
        with self._lock:
            call.state.newest = call_id
            self._calls[call_id] = call.compactor
        return view


def _with_call_id(kwargs: dict[str, Any]) -> dict[str, Any]:
    kwargs.setdefault("litellm_call_id", str(uuid.uuid4()))
    return kwargs


__all__ = ["CompactionHook", "conversation_key"]
