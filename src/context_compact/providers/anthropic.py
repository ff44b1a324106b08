"""Provider for the Anthropic Messages API.

The canonical history already is the Messages API shape, so translation is small:
``build_request`` turns a call into the keyword arguments of ``messages.create`` and
``reply_from_response`` turns the SDK's ``Message`` (or its JSON dict) back into a
canonical ``ModelReply`` made of plain dicts. Both are pure and testable without network.

Invariants:

- The caller's ``messages`` and ``tools`` are never modified; a block that gets a
  ``cache_control`` marker is a copy, inside a copied message and a copied list.
- Reply blocks are plain dicts. ``text`` and ``tool_use`` keep only the fields the API
  accepts back; ``thinking``/``redacted_thinking`` and any other block type are kept whole
  (without ``None`` fields) so a thinking signature survives the next turn.
- With ``cache=True`` up to four breakpoints are placed (the API's maximum, per Anthropic's
  prompt-caching docs): the last tool schema, the system prompt, and the last block of the
  two newest user messages. The older one is where the previous request ended, so this
  request reads the cache there; the newest one writes the cache the next request reads.
  Under the default policy the history before them changes rarely, so both keep hitting.
- The SDK is imported lazily and the client defaults to ``max_retries=0``: a refusal
  (e.g. "prompt is too long") reaches the loop at once instead of after retries.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, cast

from context_compact.errors import MissingExtra
from context_compact.messages import Block, Message, TextBlock
from context_compact.providers.base import ModelReply, Usage
from context_compact.providers.errors import raising_overflow
from context_compact.providers.thinking import thinking_refused

__all__ = [
    "AnthropicProvider",
    "build_request",
    "reply_from_response",
    "usage_from_anthropic",
    "with_cache_breakpoints",
]

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}


def with_cache_breakpoints(
    system: str, messages: list[Message], tools: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]] | None, list[Message], list[dict[str, Any]]]:
    """Copies of ``(system blocks, messages, tools)`` carrying ``cache_control`` markers.

    The system prompt becomes a one-block list (``None`` when it is empty, since the API
    rejects empty text blocks). Untouched messages are shared with the input list.
    """
    system_blocks: list[dict[str, Any]] | None = (
        [{"type": "text", "text": system, "cache_control": dict(EPHEMERAL)}] if system else None
    )
    new_tools = list(tools)
    if new_tools:
        new_tools[-1] = {**new_tools[-1], "cache_control": dict(EPHEMERAL)}
    new_messages = list(messages)
    # The previous turn's end (already cached by the last call, so this call reads it) and
    # the newest message (written now, read by the next call): four breakpoints in all, the
    # API's maximum.
    user_positions = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    for index in user_positions[-2:]:
        marked = _mark_last_block(new_messages[index])
        if marked is not None:
            new_messages[index] = marked
    return system_blocks, new_messages, new_tools


def _mark_last_block(message: Message) -> Message | None:
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return None
        blocks: list[Block] = [{"type": "text", "text": content}]
    elif isinstance(content, list) and content and isinstance(content[-1], dict):
        blocks = list(content)
    else:
        return None
    marked = blocks[-1].copy()
    marked["cache_control"] = dict(EPHEMERAL)
    blocks[-1] = marked
    return {**message, "content": blocks}


def build_request(
    *,
    model: str,
    system: str,
    messages: list[Message],
    tools: list[dict[str, Any]],
    max_tokens: int,
    cache: bool = False,
) -> dict[str, Any]:
    """Keyword arguments for ``client.messages.create`` (also the JSON body sent)."""
    request: dict[str, Any] = {"model": model, "max_tokens": max_tokens}
    if cache:
        system_blocks, messages, tools = with_cache_breakpoints(system, messages, tools)
        if system_blocks is not None:
            request["system"] = system_blocks
    elif system:
        request["system"] = system
    request["messages"] = messages
    if tools:
        request["tools"] = tools
    return request


def _as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, Mapping):
        return dict(obj)
    dumped: dict[str, Any] = obj.model_dump(mode="json")
    return dumped


def _without_none(block: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in block.items() if value is not None}


def _canonical_block(block: Mapping[str, Any]) -> Block:
    kind = block.get("type")
    if kind == "text":
        out: TextBlock = {"type": "text", "text": block.get("text", "")}
        if block.get("citations"):
            out["citations"] = block["citations"]
        return out
    if kind == "tool_use":
        # The model's id and name, unchecked: a reply is taken as the API sent it.
        return cast(
            Block,
            {
                "type": "tool_use",
                "id": block.get("id"),
                "name": block.get("name"),
                "input": block.get("input") or {},
            },
        )
    return cast(Block, _without_none(block))  # the API's block of another type, as it came


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def usage_from_anthropic(usage: Any) -> Usage:
    """``Usage`` from the API's usage object or dict (missing counts are zero)."""
    if usage is None:
        return Usage()
    data = _as_dict(usage)
    return Usage(
        input_tokens=_count(data.get("input_tokens")),
        output_tokens=_count(data.get("output_tokens")),
        cache_read_tokens=_count(data.get("cache_read_input_tokens")),
        cache_creation_tokens=_count(data.get("cache_creation_input_tokens")),
    )


def reply_from_response(response: Any) -> ModelReply:
    """A canonical ``ModelReply`` from an SDK ``Message`` or its JSON dict."""
    data = _as_dict(response)
    blocks = [_canonical_block(_as_dict(b)) for b in data.get("content") or []]
    return ModelReply(
        message={"role": "assistant", "content": blocks},
        stop_reason=data.get("stop_reason") or "end_turn",
        usage=usage_from_anthropic(data.get("usage")),
        input_transformations=tuple(data.get("input_transformations") or ()),
    )


class AnthropicProvider:
    """``Provider`` backed by ``anthropic.Anthropic().messages.create``."""

    name = "anthropic"

    def __init__(
        self,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        timeout: float = 600.0,
        max_retries: int = 0,
        cache: bool = False,
    ) -> None:
        self.model = model
        self.cache = cache
        self._owns_client = client is None
        if client is None:
            try:
                import anthropic
            except ImportError as error:
                raise MissingExtra(
                    "AnthropicProvider", "the anthropic SDK", "anthropic", "anthropic"
                ) from error

            client = anthropic.Anthropic(
                api_key=api_key,
                base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL") or None,
                timeout=timeout,
                max_retries=max_retries,
            )
        self.client = client

    def complete(
        self,
        *,
        system: str,
        messages: list[Message],
        tools: list[dict[str, Any]],
        max_tokens: int,
    ) -> ModelReply:
        request = build_request(
            model=self.model,
            system=system,
            messages=messages,
            tools=tools,
            max_tokens=max_tokens,
            cache=self.cache,
        )
        try:
            response = raising_overflow(lambda: self.client.messages.create(**request))
        except Exception as error:
            refused = thinking_refused(error)
            if refused is None:
                raise
            raise refused from error
        return reply_from_response(response)

    def close(self) -> None:
        """Close the HTTP client if this provider created it."""
        if self._owns_client:
            self.client.close()
