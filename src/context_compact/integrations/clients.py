"""Drop-in SDK clients: the caller's own client, compacting every request it sends.

    client = compacting(anthropic.Anthropic(), compactor)     # or AsyncAnthropic,
    client = compacting(openai.OpenAI(), compactor)           # OpenAI, AsyncOpenAI

``messages.create`` (Anthropic), ``chat.completions.create`` and ``responses.create`` (OpenAI),
sync or async, streaming (``stream=True``) or not, and the SDKs' streaming helpers
``messages.stream``, ``chat.completions.stream`` and ``responses.stream`` (``with ... as
stream``), each:

1. counts the fixed part of the request into the budget (``system`` or ``instructions``, and
   ``tools``: ``compactor.set_request``); system messages at the head of an OpenAI list are
   counted by the compactor itself;
2. sends ``compactor.prepare(list, request)`` in place of the caller's list (``messages`` or
   ``input``), where ``request`` is the latest user-authored text in it;
3. on a refusal that says the prompt does not fit (``providers.errors.is_context_overflow``)
   adopts the window it states (journaled: the limit keeps to it from then on) and sends
   ``compactor.reactive_compact(list, request)`` once; on the refusal of a thinking
   block whose prefix changed (``providers.thinking``), takes the thinking from that block
   on out of the view (``compactor.recover``) and sends once more; any other error, or a
   second refusal, propagates as the SDK raised it (a refusal comes as the HTTP error,
   before any event of a stream: the helpers send when their context manager is entered,
   and retry there);
4. calibrates the budget with the response's ``usage`` (``compactor.observe``), and reads
   its ``input_transformations``: thinking blocks the API dropped leave the next view at the
   same point (``compactor.thinking_dropped``); a stream's usage is read from its final
   event as the caller consumes it (``streams.watch``: the SDK stream in a proxy that passes
   each event on as it comes, iteration and ``with`` unchanged).

Anthropic requests also tell the compactor their ``model`` (``compactor.learn_model``: a
model that binds thinking to its prefix turns on the strip of ``session/thinking.py``), and
with ``prefix_mismatch_behavior="drop_block"`` (``compacting(client, compactor,
prefix_mismatch_behavior="drop_block")``, kept with the session so a resume goes on asking
it) each carries ``thinking.block_binding.prefix_mismatch_behavior`` and its beta header.

Every argument but that one list reaches the SDK as given, the SDK's return value comes back
as it is (a stream inside that proxy), and the caller's list is never modified: the SDK docs'
loops (append the response to your own list, call again) run unchanged. The compactor's
``format`` is set from the endpoint on first use (one compactor is one conversation: wrap the
client your agent loop uses, not one shared by unrelated calls). A Responses call with
``previous_response_id`` or a string ``input`` goes out untouched: the server holds that
history.

Anthropic's ``beta.messages`` is the same endpoint (one conversation with ``messages``):
``create`` and ``stream`` as above, and the SDK's own agent loop ``tool_runner(...)``, whose
every request goes out through the compacting client (compacted, a refusal for length
compacted and retried once). A server-held message thread sends only the new messages, a
history the client cannot compact, so ``tool_runner`` runs with ``thread=False`` (the whole
history each turn) unless the caller passes ``thread``; a request that continues a thread
(a ``thread`` field) goes out untouched.

Not compacted: ``with_raw_response`` and ``with_streaming_response`` (``client.messages.
with_raw_response.create(...)``...) are the wrapped client's own and send the caller's list
as it is, uncalibrated; so is everything else (``models``, ``files``, ``with_options``'s
other resources, the rest of ``beta``...). Use ``create`` or ``stream`` for a compacted call.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from ..compactor import Compactor
from ..messages import plain
from ..providers.errors import is_context_overflow
from ..providers.thinking import thinking_refused
from ..session.thinking import BETA, DROP_BLOCK
from ..telemetry import integrations_log
from .native_client import handed
from .streams import AsyncStreamManager, StreamManager, watch

__all__ = ["compacting", "latest_request"]

ANTHROPIC = "anthropic"
CHAT = "openai-chat"
RESPONSES = "openai-responses"
_TEXT_PARTS = ("text", "input_text")


def compacting(
    client: Any, compactor: Compactor, *, prefix_mismatch_behavior: str | None = None
) -> Any:
    """``client`` (an Anthropic or OpenAI SDK client, sync or async) compacting every request
    its ``messages``/``beta.messages``/``chat.completions``/``responses`` endpoints send.
    ``prefix_mismatch_behavior="drop_block"``: Anthropic requests ask the API to drop a
    thinking block whose prefix changed instead of refusing the request (kept with the
    session: a resumed one goes on asking it)."""
    module = type(client).__module__
    if prefix_mismatch_behavior not in (None, "error", DROP_BLOCK):
        raise ValueError(
            f"prefix_mismatch_behavior must be None, 'error' or 'drop_block', "
            f"got {prefix_mismatch_behavior!r}"
        )
    if prefix_mismatch_behavior is not None and module.startswith("anthropic"):
        compactor.prefix_mismatch_behavior = prefix_mismatch_behavior
    if module.startswith("anthropic"):
        # One endpoint for both: ``messages`` and ``beta.messages`` carry one conversation.
        messages = _Endpoint(compactor, ANTHROPIC, "messages")
        return _Client(
            client,
            {
                "messages": messages,
                "beta": lambda target, root: _Namespace(
                    target, {"messages": lambda res, _: _BetaResource(res, messages, root)}, root
                ),
            },
        )
    if module.startswith("openai"):
        chat = _Endpoint(compactor, CHAT, "messages")
        return _Client(
            client,
            {
                "chat": lambda target, root: _Namespace(target, {"completions": chat}, root),
                "responses": _Endpoint(compactor, RESPONSES, "input"),
            },
        )
    raise TypeError(
        f"compacting() wraps anthropic.Anthropic/AsyncAnthropic or openai.OpenAI/AsyncOpenAI "
        f"clients, got {type(client).__module__}.{type(client).__name__}"
    )


class _Delegate:
    """Every attribute not overridden is the wrapped object's own."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)

    def __repr__(self) -> str:
        return f"compacting({self._target!r})"


class _Namespace(_Delegate):
    """Some attributes wrapped: an ``_Endpoint`` as its resource, a callable given the inner
    attribute and the root ``_Client`` (what the SDK's own helpers must send through)."""

    def __init__(self, target: Any, wrapped: dict[str, Any], root: _Client | None = None) -> None:
        super().__init__(target)
        self._wrapped = wrapped
        self._root = root

    def __getattr__(self, name: str) -> Any:
        wrap = self._wrapped.get(name)
        if wrap is None:
            return getattr(self._target, name)
        inner = getattr(self._target, name)
        return wrap.bind(inner) if isinstance(wrap, _Endpoint) else wrap(inner, self._root)


class _Client(_Namespace):
    def __init__(self, target: Any, wrapped: dict[str, Any]) -> None:
        super().__init__(target, wrapped)
        self._root = self

    def with_options(self, *args: Any, **kwargs: Any) -> _Client:
        return _Client(self._target.with_options(*args, **kwargs), self._wrapped)

    copy = with_options

    def __enter__(self) -> _Client:
        self._target.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._target.__exit__(*exc)

    async def __aenter__(self) -> _Client:
        await self._target.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._target.__aexit__(*exc)


class _Endpoint:
    """How one endpoint's list is compacted; ``bind`` gives the resource proxy."""

    def __init__(self, compactor: Compactor, fmt: str, key: str) -> None:
        self.compactor = compactor
        self.format = fmt
        self.key = key
        self._returned_last: Any = None
        self._request = ""
        self._scanned: tuple[list[Any] | None, int] = (None, 0)

    def bind(self, resource: Any) -> _Resource:
        return _Resource(resource, self)

    # -- the steps -------------------------------------------------------------------------
    def applies(self, kwargs: dict[str, Any]) -> bool:
        items = kwargs.get(self.key)
        if not isinstance(items, list):
            return False
        if self.format == ANTHROPIC:
            return not kwargs.get("thread")
        return not (self.format == RESPONSES and kwargs.get("previous_response_id"))

    def before(self, kwargs: dict[str, Any]) -> tuple[list[Any], str]:
        compactor = self.compactor
        if compactor.format == "auto":
            compactor.format = self.format
        elif compactor.format != self.format:
            raise ValueError(
                f"this compactor holds a {compactor.format!r} conversation; "
                f"give the {self.format!r} endpoint a Compactor of its own"
            )
        if self.format == ANTHROPIC:
            compactor.learn_model(kwargs.get("model"))
        system = kwargs.get("system" if self.format == ANTHROPIC else "instructions")
        compactor.set_request(_system_text(system), _tools(kwargs.get("tools")))
        items: list[Any] = kwargs[self.key]
        seen, length = self._scanned
        # The SDK docs' loops append to one list: look only at what is new in it.
        start = length if seen is items and len(items) >= length else 0
        found = latest_request(items[start:], since=self._returned_last)
        if found is not None:
            self._request = found
        self._scanned = (items, len(items))
        return items, self._request

    def sent(self, kwargs: dict[str, Any], view: list[Any]) -> dict[str, Any]:
        self._returned_last = view[-1] if view else None
        out = {**kwargs, self.key: view}
        if self.format == ANTHROPIC and self.compactor.prefix_mismatch_behavior == DROP_BLOCK:
            out.update(_drop_block(kwargs))
        return out

    def after(self, result: Any, streaming: bool) -> Any:
        dropped = self.compactor.thinking_dropped if self.format == ANTHROPIC else None
        if streaming:
            return watch(result, self.format, self.compactor.observe, dropped)
        usage = getattr(result, "usage", None)
        if usage is not None:
            self.compactor.observe(usage)
        if dropped is not None:
            dropped(result)
        return result

    def retry(self, error: Exception, items: list[Any], request: str) -> list[Any] | None:
        """The view to send once more after ``error``, or None (raise it): a refusal for
        length compacted hard (the window it states adopted first), a refused thinking block
        stripped from the view (``Compactor.recover``)."""
        if thinking_refused(error) is None and not is_context_overflow(error):
            return None
        integrations_log.debug("%s refused, recovering once: %s", self.format, error)
        return self.compactor.recover(error, items, request)

    def call(
        self,
        create: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        streaming: bool = False,
    ) -> Any:
        if args or not self.applies(kwargs):
            return create(*args, **kwargs)
        items, request = self.before(kwargs)
        with handed(self.compactor, self.format, create, kwargs):
            view = self.compactor.prepare(items, request)
            try:
                result = create(**self.sent(kwargs, view))
            except Exception as error:
                again = self.retry(error, items, request)
                if again is None:
                    raise
                result = create(**self.sent(kwargs, again))
        return self.after(result, streaming or kwargs.get("stream") is True)

    async def acall(
        self,
        create: Callable[..., Awaitable[Any]],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        streaming: bool = False,
    ) -> Any:
        if args or not self.applies(kwargs):
            return await create(*args, **kwargs)
        items, request = self.before(kwargs)
        view = await self.compactor.aprepare(items, request)
        try:
            result = await create(**self.sent(kwargs, view))
        except Exception as error:
            again = await asyncio.to_thread(self.retry, error, items, request)
            if again is None:
                raise
            result = await create(**self.sent(kwargs, again))
        return self.after(result, streaming or kwargs.get("stream") is True)


class _Resource(_Delegate):
    """``messages``, ``chat.completions`` or ``responses`` with a compacting ``create`` and
    ``stream`` (the SDK helper, where the installed SDK has it)."""

    def __init__(self, target: Any, endpoint: _Endpoint) -> None:
        super().__init__(target)
        self._endpoint = endpoint

    def create(self, *args: Any, **kwargs: Any) -> Any:
        create = self._target.create
        if _is_async(self._target, create):
            return self._endpoint.acall(create, args, kwargs)
        return self._endpoint.call(create, args, kwargs)

    def stream(self, *args: Any, **kwargs: Any) -> Any:
        open_manager = self._target.stream
        if _is_async(self._target, open_manager):
            return AsyncStreamManager(self._endpoint, open_manager, args, kwargs)
        return StreamManager(self._endpoint, open_manager, args, kwargs)


class _BetaResource(_Resource):
    """``beta.messages``: ``create`` and ``stream`` as above, and the SDK's own agent loop,
    ``tool_runner``, sending each of its requests through the compacting client."""

    def __init__(self, target: Any, endpoint: _Endpoint, root: _Client | None) -> None:
        super().__init__(target, endpoint)
        self._root = root

    def tool_runner(self, *args: Any, **kwargs: Any) -> Any:
        # A server-held thread sends only new messages, a history we could not compact: the
        # runner sends the whole history each turn unless the caller asked for a thread.
        kwargs.setdefault("thread", False)
        # The runner's thread sends through the resource's ``_client``: make that ours.
        through = _SendingThrough(self._target, self._root)
        return type(self._target).tool_runner(through, *args, **kwargs)


class _SendingThrough(_Delegate):
    """A resource whose ``_client`` is the compacting client, for the SDK's helpers that send
    through ``self._client``."""

    def __init__(self, target: Any, client: Any) -> None:
        super().__init__(target)
        self._client = client


def _is_async(resource: Any, method: Any) -> bool:
    # The SDKs wrap their async create methods in sync decorators; their classes say it.
    return inspect.iscoroutinefunction(method) or type(resource).__name__.startswith("Async")


def _drop_block(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The request's ``thinking`` asking the API to drop a thinking block whose prefix
    changed, and the beta header that field needs (added to the caller's own headers)."""
    thinking = kwargs.get("thinking")
    base: dict[str, Any] = dict(thinking) if isinstance(thinking, dict) else {"type": "adaptive"}
    given = base.get("block_binding")
    binding: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
    binding["prefix_mismatch_behavior"] = DROP_BLOCK
    headers = dict(kwargs.get("extra_headers") or {})
    betas = [b for b in str(headers.get("anthropic-beta", "")).split(",") if b.strip()]
    headers["anthropic-beta"] = ",".join(dict.fromkeys([*betas, BETA]))
    return {"thinking": {**base, "block_binding": binding}, "extra_headers": headers}


def _system_text(system: Any) -> str | None:
    if system is None or isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n\n".join(str(plain(b).get("text", "")) for b in system)
    return str(system)


def _tools(tools: Any) -> list[Any] | None:
    if not isinstance(tools, list):
        return None
    return [plain(t) for t in tools]


def latest_request(items: list[Any], since: Any = None) -> str | None:
    """The text of the latest user-authored message in ``items`` (no tool results in it),
    looking back only to ``since`` (the last item sent before) when it is in the list; None
    when there is none there."""
    for item in reversed(items):
        if since is not None and item is since:
            return None
        role = item.get("role") if isinstance(item, dict) else getattr(item, "role", None)
        if role != "user":
            continue
        content = plain(item).get("content")
        if isinstance(content, str):
            return content
        if not isinstance(content, list):
            continue
        parts = [plain(p) for p in content]
        if any(isinstance(p, dict) and p.get("type") == "tool_result" for p in parts):
            continue
        texts = [
            str(p.get("text", ""))
            for p in parts
            if isinstance(p, dict) and p.get("type") in _TEXT_PARTS
        ]
        if texts:
            return "\n".join(texts)
    return None
