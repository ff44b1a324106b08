"""The drop-in client's side of the native tier: the provider's compaction, asked through the
caller's own client (``session/native_tier.py`` holds the engine's side).

While a compacting ``messages.create`` or ``beta.messages.create`` of an Anthropic client
runs (sync, or the sync ``stream`` helper, which asks with its resource's ``create``; under a
policy with ``native`` on), the engine holds a ``NativeCompact`` made from that very call: a
summary it decides on during the call sends the messages it replaces as an on-demand
compaction request (``compaction={"type": "summarize"}``, beta ``compact-2026-09-04``) with
the call's own model, system prompt, tools and options, through the same SDK resource, and
gets the block back unchanged. The request leaves out what the API refuses beside it
(``context_management``) and what does not apply (``stream``). Its usage is not observed: it
measures the compaction's input, not the conversation's view.

An OpenAI client's ``responses.create`` (sync) hands in the Responses API's ``compact``
endpoint instead: the messages go as ``input`` with the call's model and instructions, and
the ``compaction`` item it returns (encrypted: only OpenAI reads it) opens the view from then
on, carried as a passthrough block. Not handed in (our own summary is used): async clients,
the streaming helpers of the Responses API, Chat Completions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..compactor import Compactor
from ..messages import Block, Message, block_at, plain
from ..session.native_tier import NativeCompact

COMPACT_BETA = "compact-2026-09-04"
LEFT_OUT = ("messages", "stream", "context_management", "thread")


def anthropic_compaction(
    create: Callable[..., Any], kwargs: dict[str, Any]
) -> Callable[[list[Message]], dict[str, Any]]:
    """A ``NativeCompact`` sending through ``create`` with the options of ``kwargs``."""
    fixed = {k: v for k, v in kwargs.items() if k not in LEFT_OUT}
    resource = getattr(create, "__self__", None)
    beta = ".beta." in type(resource).__module__

    def compact(messages: list[Message]) -> dict[str, Any]:
        ask = {**fixed, "messages": messages}
        if beta:
            ask["compaction"] = {"type": "summarize"}
            ask["betas"] = list(dict.fromkeys([*(fixed.get("betas") or []), COMPACT_BETA]))
        else:
            ask["extra_body"] = {
                **(fixed.get("extra_body") or {}),
                "compaction": {"type": "summarize"},
            }
            headers = dict(fixed.get("extra_headers") or {})
            given = headers.get("anthropic-beta")
            headers["anthropic-beta"] = f"{given},{COMPACT_BETA}" if given else COMPACT_BETA
            ask["extra_headers"] = headers
        response = create(**ask)
        for block in getattr(response, "content", None) or []:
            shown = plain(block)
            if isinstance(shown, dict) and shown.get("type") == "compaction":
                return shown
        stop = getattr(response, "stop_reason", None)
        raise ValueError(f"the compaction request returned no compaction block ({stop})")

    return compact


def sdk_create(create: Callable[..., Any]) -> Callable[..., Any] | None:
    """The SDK's own ``create`` behind ``create`` (a streaming helper's: its resource's),
    or None when it is not an Anthropic SDK method."""
    owner = getattr(create, "__self__", None)
    method: Callable[..., Any] | None = create
    opener = getattr(owner, "_open_manager", None)
    if opener is not None:  # ``messages.stream``: the compaction is asked with ``create``
        owner = getattr(opener, "__self__", None)
        method = getattr(owner, "create", None)
    if owner is None or method is None or not type(owner).__module__.startswith("anthropic"):
        return None
    return method


def responses_compaction(resource: Any, kwargs: dict[str, Any]) -> Callable[[list[Message]], Block]:
    """A ``NativeCompact`` through the Responses API's ``compact`` endpoint of ``resource``
    (``client.responses``), with the call's model and instructions: the compaction item it
    returns, as the passthrough block the view carries it in."""
    from ..formats.openai_responses import from_canonical, to_canonical

    fixed = {k: kwargs[k] for k in ("model", "instructions") if kwargs.get(k) is not None}

    def compact(messages: list[Message]) -> Block:
        result = resource.compact(**fixed, input=from_canonical(messages))
        for item in getattr(result, "output", None) or []:
            kind = item.get("type") if isinstance(item, dict) else getattr(item, "type", None)
            shown = plain(item) if kind == "compaction" else None  # only the item is ours
            if isinstance(shown, dict):
                _, canonical = to_canonical([shown])
                return block_at(canonical[0], 0).copy()
        raise ValueError("the compact endpoint returned no compaction item")

    return compact


@contextmanager
def handed(
    compactor: Compactor, fmt: str, create: Callable[..., Any], kwargs: dict[str, Any]
) -> Iterator[None]:
    """The engine holds this call's compaction while the block runs (Anthropic, sync, a
    policy with ``native`` on, an engine that takes one); nothing otherwise."""
    session: Any = compactor.engine.session
    on = getattr(compactor.policy, "native", False) and hasattr(session, "native")
    compact: NativeCompact | None = None
    if on and fmt == "anthropic":
        method = sdk_create(create)
        compact = anthropic_compaction(method, kwargs) if method is not None else None
    elif on and fmt == "openai-responses":
        resource = getattr(create, "__self__", None)
        if callable(getattr(resource, "compact", None)) and "Async" not in type(resource).__name__:
            compact = responses_compaction(resource, kwargs)
    if compact is None:
        yield
        return
    session.native = compact
    try:
        yield
    finally:
        session.native = None


__all__ = ["COMPACT_BETA", "anthropic_compaction", "handed", "responses_compaction", "sdk_create"]
