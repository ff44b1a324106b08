"""Streamed calls through the drop-in clients: compacted when opened, calibrated when read.

A streamed call (``create(stream=True)``, or the SDKs' ``stream(...)`` helpers) has no usage
when it returns: the API reports it in the stream's last events. So the stream object the
SDK returns is handed back inside a thin proxy (``watch``) that looks at each event as it
passes to the caller and, on the event that carries the final usage, calls ``observe`` once:

- Anthropic: ``message_start`` carries the input counts and ``message_delta`` the cumulative
  ones, delivered at ``message_stop`` (the helper's ``message_stop`` has the whole message);
- OpenAI chat: the chunk whose ``usage`` is set, sent last when the request asked
  ``stream_options={"include_usage": True}`` (without it the API reports no usage: such a
  stream goes uncalibrated);
- OpenAI Responses: ``response.completed`` (or ``.incomplete``/``.failed``) with its usage.

Events are passed on one at a time, never buffered. The helpers also consume their stream
internally (``get_final_message()``, ``until_done()``, ``text_stream``...); the proxy reads
the final object's usage once those return. A stream abandoned before its last event, or one
that fails mid-stream, is not calibrated: there is no usage to read.

The helpers send their request when their context manager is entered, so ``StreamManager``
and ``AsyncStreamManager`` compact there, through the same ``_Endpoint.call`` as ``create``
(typed here as ``Endpoint``: the clients module imports this one, never the reverse): a
refusal for length, which arrives as the HTTP error before any event, is compacted and retried
once. Everything else (``response``, ``close``, snapshots...) is the SDK object's own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Protocol

__all__ = ["AsyncStreamManager", "StreamManager", "merge_usage", "watch"]

ANTHROPIC = "anthropic"
CHAT = "openai-chat"
_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)
_RESPONSE_ENDS = ("response.completed", "response.incomplete", "response.failed")


class _Usage:
    """Reads the final usage out of a stream's events; ``seen`` is True once delivered."""

    def __init__(
        self,
        fmt: str,
        observe: Callable[[Any], None],
        dropped: Callable[[Any], object] | None = None,
    ) -> None:
        self.format = fmt
        self._observe = observe
        self._dropped = dropped
        self._anthropic: dict[str, int] = {}
        self.seen = False

    def see(self, event: Any) -> None:
        if self.seen:
            return
        if self.format == ANTHROPIC:
            self._see_anthropic(event)
        elif self.format == CHAT:
            chunk = getattr(event, "chunk", event)  # the helper wraps raw chunks in events
            self.deliver(getattr(chunk, "usage", None))
        elif getattr(event, "type", None) in _RESPONSE_ENDS:
            self.deliver(getattr(getattr(event, "response", None), "usage", None))

    def _see_anthropic(self, event: Any) -> None:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            self._merge(getattr(event.message, "usage", None))
            if self._dropped is not None:
                # The thinking blocks the API dropped from the request are listed up front.
                self._dropped(event.message)
        elif kind == "message_delta":
            self._merge(getattr(event, "usage", None))
        elif kind == "message_stop":
            message = getattr(event, "message", None)
            self.deliver(message.usage if message is not None else dict(self._anthropic))

    def _merge(self, usage: Any) -> None:
        merge_usage(self._anthropic, usage)

    def deliver(self, usage: Any) -> None:
        if usage is None or self.seen or usage == {}:
            return
        self.seen = True
        self._observe(usage)

    def final(self, result: Any) -> Any:
        """``result`` of a helper's ``get_final_*``: its usage is the stream's."""
        self.deliver(getattr(result, "usage", None))
        return result


def merge_usage(counts: dict[str, int], usage: Any) -> None:
    """An Anthropic stream's ``message_start`` or ``message_delta`` usage (an SDK object or the
    event's JSON) into ``counts``: the delta's counts are cumulative and omit what does not
    apply, so a count given overwrites and one omitted keeps its value."""
    for name in _USAGE_FIELDS:
        value = usage.get(name) if isinstance(usage, dict) else getattr(usage, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            counts[name] = value


_FINAL = {ANTHROPIC: "get_final_message", CHAT: "get_final_completion"}


def _final_getter(fmt: str) -> str:
    return _FINAL.get(fmt, "get_final_response")


def watch(
    stream: Any,
    fmt: str,
    observe: Callable[[Any], None],
    dropped: Callable[[Any], object] | None = None,
) -> Any:
    """``stream`` (an SDK stream object, sync or async) calling ``observe`` with its final
    usage as the caller reads it, and ``dropped`` with an Anthropic stream's opening message
    (its ``input_transformations``)."""
    if hasattr(stream, "__aiter__"):
        return _AsyncWatched(stream, _Usage(fmt, observe, dropped))
    return _Watched(stream, _Usage(fmt, observe, dropped))


class _Proxy:
    def __init__(self, target: Any, usage: _Usage) -> None:
        self._target = target
        self._usage = usage

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)

    def __repr__(self) -> str:
        return f"compacting({self._target!r})"


class _Watched(_Proxy):
    def __iter__(self) -> Iterator[Any]:
        for event in self._target:
            self._usage.see(event)
            yield event
        self._settle()

    def __next__(self) -> Any:
        try:
            event = next(self._target)
        except StopIteration:
            self._settle()
            raise
        self._usage.see(event)
        return event

    def __enter__(self) -> _Watched:
        self._target.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._target.__exit__(*exc)

    @property
    def text_stream(self) -> Iterator[str]:
        yield from self._target.text_stream
        self._settle()

    def until_done(self) -> Any:
        result = self._target.until_done()
        self._settle()
        return result if result is not self._target else self

    def get_final_message(self) -> Any:
        return self._usage.final(self._target.get_final_message())

    def get_final_completion(self) -> Any:
        return self._usage.final(self._target.get_final_completion())

    def get_final_response(self) -> Any:
        return self._usage.final(self._target.get_final_response())

    def get_final_text(self) -> Any:
        text = self._target.get_final_text()
        self._settle()
        return text

    def _settle(self) -> None:
        """After the helper read its stream to the end: take the usage from its final object
        (a raw SDK stream has none; it was read event by event)."""
        getter = getattr(self._target, _final_getter(self._usage.format), None)
        if self._usage.seen or getter is None:
            return
        try:
            final = getter()
        except RuntimeError:
            return  # the SDK built no final object (an incomplete response): no usage
        self._usage.final(final)


class _AsyncWatched(_Proxy):
    async def __aiter__(self) -> AsyncIterator[Any]:
        async for event in self._target:
            self._usage.see(event)
            yield event
        await self._settle()

    async def __anext__(self) -> Any:
        try:
            event = await self._target.__anext__()
        except StopAsyncIteration:
            await self._settle()
            raise
        self._usage.see(event)
        return event

    async def __aenter__(self) -> _AsyncWatched:
        await self._target.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._target.__aexit__(*exc)

    @property
    def text_stream(self) -> AsyncIterator[str]:
        return self._text_stream()

    async def _text_stream(self) -> AsyncIterator[str]:
        async for text in self._target.text_stream:
            yield text
        await self._settle()

    async def until_done(self) -> Any:
        result = await self._target.until_done()
        await self._settle()
        return result if result is not self._target else self

    async def get_final_message(self) -> Any:
        return self._usage.final(await self._target.get_final_message())

    async def get_final_completion(self) -> Any:
        return self._usage.final(await self._target.get_final_completion())

    async def get_final_response(self) -> Any:
        return self._usage.final(await self._target.get_final_response())

    async def get_final_text(self) -> Any:
        text = await self._target.get_final_text()
        await self._settle()
        return text

    async def _settle(self) -> None:
        getter = getattr(self._target, _final_getter(self._usage.format), None)
        if self._usage.seen or getter is None:
            return
        try:
            final = await getter()
        except RuntimeError:
            return  # the SDK built no final object (an incomplete response): no usage
        self._usage.final(final)


class Endpoint(Protocol):
    """What a stream manager sends through: ``clients._Endpoint`` (its ``call`` and ``acall``
    compact, send and observe)."""

    def call(self, *args: Any, **kwargs: Any) -> Any: ...

    async def acall(self, *args: Any, **kwargs: Any) -> Any: ...


class StreamManager:
    """The helper's context manager: compacts and sends on ``__enter__``, as the SDK's does."""

    def __init__(
        self,
        endpoint: Endpoint,
        open_manager: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        self._endpoint = endpoint
        self._open_manager = open_manager
        self._args, self._kwargs = args, kwargs
        self._inner: Any = None

    def _open(self, *args: Any, **kwargs: Any) -> Any:
        manager = self._open_manager(*args, **kwargs)
        stream = manager.__enter__()  # sends the request; a refusal raises here
        self._inner = manager
        return stream

    def __enter__(self) -> Any:
        return self._endpoint.call(self._open, self._args, self._kwargs, streaming=True)

    def __exit__(self, *exc: Any) -> Any:
        if self._inner is not None:
            return self._inner.__exit__(*exc)
        return None


class AsyncStreamManager:
    """``StreamManager`` for the async clients (``async with``)."""

    def __init__(
        self,
        endpoint: Endpoint,
        open_manager: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        self._endpoint = endpoint
        self._open_manager = open_manager
        self._args, self._kwargs = args, kwargs
        self._inner: Any = None

    async def _open(self, *args: Any, **kwargs: Any) -> Any:
        manager = self._open_manager(*args, **kwargs)
        stream = await manager.__aenter__()
        self._inner = manager
        return stream

    async def __aenter__(self) -> Any:
        return await self._endpoint.acall(self._open, self._args, self._kwargs, streaming=True)

    async def __aexit__(self, *exc: Any) -> Any:
        if self._inner is not None:
            return await self._inner.__aexit__(*exc)
        return None
