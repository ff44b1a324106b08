"""Provider for OpenAI-compatible Chat Completions servers (OpenAI, vLLM, llama.cpp, ...).

Canonical histories are Anthropic-shaped; this module translates them to Chat Completions
messages and back with pure functions (``to_openai``, ``from_openai``, ``tools_to_openai``,
``reply_from_completion``) and keeps the SDK call in ``OpenAIChatProvider``.

Mapping:

- ``system`` string -> leading ``{"role": "system"}`` message (none when empty).
- assistant ``text`` blocks -> ``content`` as a list of text parts, ``tool_use`` blocks ->
  ``tool_calls`` with JSON-string ``arguments``; ``content`` is ``None`` when there is only
  tool calls. ``thinking`` blocks are dropped: their signatures mean nothing here.
- user ``tool_result`` blocks -> one ``{"role": "tool", "tool_call_id"}`` message each, then
  the remaining blocks (text, images) as one user message. ``from_openai`` merges a user
  message that directly follows tool messages back into the tool-result message.
- Arguments that are not a JSON object come back as ``{"_raw_arguments": "<text>"}`` and
  are sent verbatim again, so a model's malformed call neither crashes nor gets rewritten.

Round trip ``from_openai(to_openai(m, s)) == (s or None, m)`` holds for histories of
``user``/``assistant`` messages whose content is a string or a list of ``text`` blocks,
assistant ``tool_use`` blocks after the text, and user ``tool_result`` blocks (string or
text-block content, no ``is_error``) before any text, with no two user messages in a row
where the first holds tool results (Anthropic merges those anyway). Extra block keys such
as ``cache_control`` or ``citations`` are not carried. ``is_error`` is sent as an
``"Error: "`` prefix because Chat Completions has no such flag; it does not come back.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from context_compact.errors import MissingExtra
from context_compact.providers import local
from context_compact.providers.base import ModelReply, Usage
from context_compact.providers.errors import raising_overflow

__all__ = [
    "OpenAIChatProvider",
    "build_request",
    "from_openai",
    "output_budget_param",
    "reply_from_completion",
    "to_openai",
    "tools_from_openai",
    "tools_to_openai",
    "usage_from_openai",
]

RAW_ARGUMENTS = "_raw_arguments"
LOCAL_PLACEHOLDER_KEY = "sk-local-no-key"

STOP_REASONS: dict[str, str] = {
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "stop": "end_turn",
    "length": "max_tokens",
    "content_filter": "refusal",
}


# -- tools -------------------------------------------------------------------------------


def tools_to_openai(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic tool schemas (``name``, ``description``, ``input_schema``) as functions."""
    converted = []
    for tool in tools:
        function: dict[str, Any] = {"name": tool["name"]}
        if tool.get("description"):
            function["description"] = tool["description"]
        function["parameters"] = tool.get("input_schema") or {"type": "object", "properties": {}}
        converted.append({"type": "function", "function": function})
    return converted


def tools_from_openai(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The inverse of ``tools_to_openai`` for ``{"type": "function"}`` tools."""
    converted = []
    for tool in tools:
        function = tool.get("function") or {}
        schema: dict[str, Any] = {"name": function.get("name")}
        if function.get("description"):
            schema["description"] = function["description"]
        schema["input_schema"] = function.get("parameters") or {"type": "object", "properties": {}}
        converted.append(schema)
    return converted


# -- canonical -> Chat Completions -------------------------------------------------------


def to_openai(messages: list[dict[str, Any]], system: str = "") -> list[dict[str, Any]]:
    """Chat Completions messages for a canonical history (inputs are not modified)."""
    converted: list[dict[str, Any]] = []
    if system:
        converted.append({"role": "system", "content": system})
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role == "assistant":
            converted.append(_assistant_to_openai(content))
        elif role == "user":
            converted.extend(_user_to_openai(content))
        else:
            raise ValueError(f"canonical messages have role 'user' or 'assistant', got {role!r}")
    return converted


def _arguments(tool_input: Any) -> str:
    if (
        isinstance(tool_input, dict)
        and set(tool_input) == {RAW_ARGUMENTS}
        and isinstance(tool_input[RAW_ARGUMENTS], str)
    ):
        return str(tool_input[RAW_ARGUMENTS])
    return json.dumps(tool_input if tool_input is not None else {}, ensure_ascii=False)


def _assistant_to_openai(content: Any) -> dict[str, Any]:
    if isinstance(content, str):
        return {"role": "assistant", "content": content}
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for block in content or []:
        kind = block.get("type")
        if kind == "text":
            parts.append({"type": "text", "text": block.get("text", "")})
        elif kind == "tool_use":
            calls.append(
                {
                    "id": block.get("id"),
                    "type": "function",
                    "function": {
                        "name": block.get("name"),
                        "arguments": _arguments(block.get("input")),
                    },
                }
            )
    message: dict[str, Any] = {
        "role": "assistant",
        "content": parts if parts or not calls else None,
    }
    if calls:
        message["tool_calls"] = calls
    return message


def _image_part(block: Mapping[str, Any]) -> dict[str, Any] | None:
    source = block.get("source") or {}
    if source.get("type") == "base64":
        url = f"data:{source.get('media_type')};base64,{source.get('data')}"
    elif source.get("type") == "url":
        url = source.get("url", "")
    else:
        return None
    return {"type": "image_url", "image_url": {"url": url}}


def _fallback_text(block: Mapping[str, Any]) -> dict[str, Any]:
    # Better the model sees an unsupported block as text than the request fails.
    return {"type": "text", "text": json.dumps(dict(block), ensure_ascii=False, sort_keys=True)}


def _user_part(block: Mapping[str, Any]) -> dict[str, Any]:
    if block.get("type") == "text":
        return {"type": "text", "text": block.get("text", "")}
    if block.get("type") == "image":
        part = _image_part(block)
        if part is not None:
            return part
    return _fallback_text(block)


def _tool_message_content(block: Mapping[str, Any]) -> str | list[dict[str, Any]]:
    content = block.get("content", "")
    prefix = "Error: " if block.get("is_error") else ""
    if isinstance(content, list):
        # Tool messages may carry text parts only.
        parts = [
            {"type": "text", "text": b.get("text", "")}
            if b.get("type") == "text"
            else {"type": "text", "text": f"[{b.get('type')} block omitted]"}
            for b in content
        ]
        if prefix:
            parts.insert(0, {"type": "text", "text": prefix.strip()})
        return parts
    return prefix + str(content)


def _user_to_openai(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"role": "user", "content": content}]
    tool_messages: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in content or []:
        if block.get("type") == "tool_result":
            tool_messages.append(
                {
                    "role": "tool",
                    "tool_call_id": block.get("tool_use_id"),
                    "content": _tool_message_content(block),
                }
            )
        else:
            parts.append(_user_part(block))
    if parts or not tool_messages:
        return [*tool_messages, {"role": "user", "content": parts}]
    return tool_messages


# -- Chat Completions -> canonical -------------------------------------------------------


def from_openai(messages: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """``(system, canonical messages)`` from Chat Completions messages.

    System and developer messages are joined into the system string (``None`` if there is
    none). Consecutive tool messages become one user message of ``tool_result`` blocks.
    """
    system_parts: list[str] = []
    converted: list[dict[str, Any]] = []
    open_results: list[dict[str, Any]] | None = None
    for message in messages:
        role = message.get("role")
        if role in ("system", "developer"):
            system_parts.append(_plain_text(message.get("content")))
            continue
        if role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": message.get("tool_call_id"),
                "content": _tool_result_content(message.get("content")),
            }
            if open_results is None:
                open_results = [block]
                converted.append({"role": "user", "content": open_results})
            else:
                open_results.append(block)
            continue
        if role == "user":
            content = _user_content(message.get("content"))
            if open_results is not None:
                if isinstance(content, list):
                    open_results.extend(content)
                elif content:
                    open_results.append({"type": "text", "text": content})
            else:
                converted.append({"role": "user", "content": content})
        elif role == "assistant":
            converted.append(_assistant_from_openai(message))
        else:
            raise ValueError(f"unsupported Chat Completions role {role!r}")
        open_results = None
    return ("\n\n".join(system_parts) if system_parts else None), converted


def _plain_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    return "" if content is None else str(content)


def _tool_result_content(content: Any) -> str | list[dict[str, Any]]:
    if isinstance(content, list):
        return [{"type": "text", "text": _part_text(p)} for p in content]
    return "" if content is None else str(content)


def _part_text(part: Mapping[str, Any]) -> str:
    if part.get("type") == "refusal":
        return str(part.get("refusal", ""))
    return str(part.get("text", ""))


def _image_block(url: str) -> dict[str, Any]:
    if url.startswith("data:") and ";base64," in url:
        header, data = url[len("data:") :].split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": header, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _user_content(content: Any) -> str | list[dict[str, Any]]:
    if not isinstance(content, list):
        return "" if content is None else str(content)
    blocks: list[dict[str, Any]] = []
    for part in content:
        if part.get("type") == "image_url":
            blocks.append(_image_block(str((part.get("image_url") or {}).get("url", ""))))
        elif part.get("type") == "text":
            blocks.append({"type": "text", "text": str(part.get("text", ""))})
        else:
            blocks.append({"type": "text", "text": json.dumps(part, ensure_ascii=False)})
    return blocks


def _parse_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        return {RAW_ARGUMENTS: "" if raw is None else str(raw)}
    if not raw.strip():
        # Some servers send "" for a call without arguments.
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {RAW_ARGUMENTS: raw}
    return parsed if isinstance(parsed, dict) else {RAW_ARGUMENTS: raw}


def _tool_use(call: Mapping[str, Any]) -> dict[str, Any]:
    if call.get("type") == "custom":
        custom = call.get("custom") or {}
        name, tool_input = custom.get("name"), {RAW_ARGUMENTS: str(custom.get("input", ""))}
    else:
        function = call.get("function") or {}
        name, tool_input = function.get("name"), _parse_arguments(function.get("arguments"))
    return {"type": "tool_use", "id": call.get("id"), "name": name, "input": tool_input}


def _assistant_from_openai(
    message: Mapping[str, Any], *, always_blocks: bool = False
) -> dict[str, Any]:
    content = message.get("content")
    tool_uses = [_tool_use(call) for call in message.get("tool_calls") or []]
    if isinstance(content, str) and not tool_uses and not always_blocks:
        return {"role": "assistant", "content": content}
    blocks: list[dict[str, Any]] = []
    if isinstance(content, list):
        blocks = [{"type": "text", "text": _part_text(p)} for p in content]
    elif isinstance(content, str) and content:
        blocks = [{"type": "text", "text": content}]
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal and not blocks:
        blocks = [{"type": "text", "text": refusal}]
    return {"role": "assistant", "content": blocks + tool_uses}


# -- replies -----------------------------------------------------------------------------


def _as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, Mapping):
        return dict(obj)
    dumped: dict[str, Any] = obj.model_dump(mode="json")
    return dumped


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def usage_from_openai(usage: Any) -> Usage:
    """``Usage`` with cached prompt tokens split out of ``prompt_tokens``."""
    if usage is None:
        return Usage()
    data = _as_dict(usage)
    details = data.get("prompt_tokens_details") or {}
    cached = _count(details.get("cached_tokens"))
    written = _count(details.get("cache_write_tokens"))
    return Usage(
        input_tokens=max(_count(data.get("prompt_tokens")) - cached - written, 0),
        output_tokens=_count(data.get("completion_tokens")),
        cache_read_tokens=cached,
        cache_creation_tokens=written,
    )


def reply_from_completion(completion: Any) -> ModelReply:
    """A canonical ``ModelReply`` from an SDK ``ChatCompletion`` or its JSON dict."""
    data = _as_dict(completion)
    choices = data.get("choices") or []
    choice = choices[0] if choices else {}
    message = _assistant_from_openai(choice.get("message") or {}, always_blocks=True)
    finish = choice.get("finish_reason")
    stop_reason = STOP_REASONS.get(finish, finish) if finish else "end_turn"
    if stop_reason == "end_turn" and any(b["type"] == "tool_use" for b in message["content"]):
        # Some local servers report "stop" even when the turn ends in tool calls.
        stop_reason = "tool_use"
    return ModelReply(
        message=message, stop_reason=stop_reason, usage=usage_from_openai(data.get("usage"))
    )


# -- provider ----------------------------------------------------------------------------


# OpenAI's reasoning models refuse ``max_tokens``: the SDK's own docstring for it reads "now
# deprecated in favor of `max_completion_tokens`, and is not compatible with o-series models"
# (openai-python, types/chat/completion_create_params.py); the GPT-5 family are reasoning
# models too (https://platform.openai.com/docs/guides/reasoning).
_REASONING_MODEL = re.compile(r"^(?:[\w.-]+/)?(?:o\d|gpt-5)", re.IGNORECASE)


def output_budget_param(model: str) -> str:
    """``"max_completion_tokens"`` for OpenAI reasoning models (o1, o3, o4-mini..., gpt-5*,
    also behind a ``provider/`` prefix), ``"max_tokens"`` for the rest: older models and the
    local servers (vLLM, llama.cpp, Ollama) that read only that one."""
    return "max_completion_tokens" if _REASONING_MODEL.match(model) else "max_tokens"


def build_request(
    *,
    model: str,
    system: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    max_tokens: int,
    max_tokens_param: str | None = None,
) -> dict[str, Any]:
    """Keyword arguments for ``client.chat.completions.create`` (also the JSON body); the
    output budget goes in ``max_tokens_param``, by default the one ``model`` accepts."""
    request: dict[str, Any] = {
        "model": model,
        "messages": to_openai(messages, system),
        (max_tokens_param or output_budget_param(model)): max_tokens,
    }
    if tools:
        request["tools"] = tools_to_openai(tools)
    return request


def is_local_url(url: str) -> bool:
    """True for localhost, loopback and private-network hosts (servers that need no key)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_unspecified


def _plain_assistant(message: dict[str, Any]) -> dict[str, Any]:
    """An assistant message whose content is text parts, with that text as one string:
    llama-cpp-python 0.3 refuses a list there (HTTP 500 naming its request schema), so a
    provider that met that refusal sends strings from then on."""
    content = message.get("content")
    if message.get("role") != "assistant" or not isinstance(content, list):
        return message
    if not all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return message
    return {**message, "content": "".join(str(p.get("text", "")) for p in content)}


def _wants_strings(error: BaseException) -> bool:
    """llama-cpp-python's refusal of an assistant message whose content is a list."""
    text = str(error)
    return "ChatCompletionRequestAssistantMessage" in text and "valid string" in text


class OpenAIChatProvider:
    """``Provider`` backed by ``openai.OpenAI().chat.completions.create``.

    ``max_tokens_param`` names the request field for the output budget; by default the one
    the model accepts (``output_budget_param``: ``"max_completion_tokens"`` for OpenAI's
    reasoning models, ``"max_tokens"`` for the rest).
    """

    name = "openai"
    _plain_text = False
    _window: local.ServerWindow | bool | None = False

    def __init__(
        self,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        max_retries: int = 0,
        timeout: float = 600.0,
        max_tokens_param: str | None = None,
    ) -> None:
        self.model = model
        self.max_tokens_param = max_tokens_param or output_budget_param(model)
        self._owns_client = client is None
        if client is None:
            try:
                import openai
            except ImportError as error:
                raise MissingExtra(
                    "OpenAIChatProvider", "the openai SDK", "openai", "openai"
                ) from error

            base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
            api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
            if api_key is None and base_url is not None and is_local_url(base_url):
                # The SDK refuses to start without a key; local servers ignore it.
                api_key = LOCAL_PLACEHOLDER_KEY
            options: dict[str, Any] = {"timeout": timeout, "max_retries": max_retries}
            if base_url is not None:
                options["base_url"] = base_url
            client = openai.OpenAI(api_key=api_key, **options)
        self.client = client
        self._window: local.ServerWindow | bool | None = False  # False: not asked yet

    @property
    def base_url(self) -> str:
        return str(getattr(self.client, "base_url", "") or "")

    def context_window(self) -> local.ServerWindow | None:
        """The window the server runs the model at, asked once (``providers.local``: llama.cpp
        ``/props``, vLLM, LM Studio, Ollama, llama-cpp-python's refusal); None for OpenAI's
        own API and a server that does not say. Never raises."""
        if self._window is False:
            url = self.base_url
            key = getattr(self.client, "api_key", None)
            found = None
            if local.asks_server(url):
                found = local.discover_window(url, self.model, key=key, ask_refusal=True)
            self._window = found
        return self._window if isinstance(self._window, local.ServerWindow) else None

    def token_counter(self, fallback: Any) -> local.ServerTokenizer | None:
        """``text -> tokens`` counted by the server's tokenize endpoint (llama.cpp, vLLM,
        llama-cpp-python), ``fallback`` (the estimate) while it does not answer; None when
        the server has no such endpoint."""
        url, key = self.base_url, getattr(self.client, "api_key", None)
        endpoint = (
            local.find_tokenizer(url, self.model, key=key) if local.asks_server(url) else None
        )
        return None if endpoint is None else local.ServerTokenizer(endpoint, fallback, key=key)

    def complete(
        self,
        *,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        max_tokens: int,
    ) -> ModelReply:
        request = build_request(
            model=self.model,
            system=system,
            messages=messages,
            tools=tools,
            max_tokens=max_tokens,
            max_tokens_param=self.max_tokens_param,
        )
        if self._plain_text:
            request["messages"] = [_plain_assistant(m) for m in request["messages"]]
        try:
            response = raising_overflow(lambda: self.client.chat.completions.create(**request))
        except Exception as error:
            if self._plain_text or not _wants_strings(error):
                raise
            # Once refused, every later request of this provider is sent as the server takes it.
            self._plain_text = True
            return self.complete(
                system=system, messages=messages, tools=tools, max_tokens=max_tokens
            )
        return reply_from_completion(response)

    def close(self) -> None:
        """Close the HTTP client if this provider created it."""
        if self._owns_client:
            self.client.close()
