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
import os
import re
from typing import Any
from urllib.parse import urlsplit

from context_compact.errors import MissingExtra
from context_compact.messages import Message, blocks
from context_compact.providers import local
from context_compact.providers.base import ModelReply, Usage
from context_compact.providers.errors import raising_overflow

from .openai_messages import LOCAL_PLACEHOLDER_KEY as LOCAL_PLACEHOLDER_KEY
from .openai_messages import RAW_ARGUMENTS as RAW_ARGUMENTS
from .openai_messages import STOP_REASONS, _as_dict, _assistant_from_openai, _count
from .openai_messages import from_openai as from_openai
from .openai_messages import to_openai as to_openai
from .openai_messages import tools_from_openai as tools_from_openai
from .openai_messages import tools_to_openai as tools_to_openai

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
    if stop_reason == "end_turn" and any(b["type"] == "tool_use" for b in blocks(message)):
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
    messages: list[Message],
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


def _plain_text(message: dict[str, Any]) -> dict[str, Any]:
    """A message whose content is text parts only, with that text as one string (the parts
    joined as the API joins them: end to end). llama-cpp-python 0.3 refuses a list in an
    assistant message (HTTP 500 naming its request schema), and a chat template that joins
    strings (SmolLM2's, many others) fails on a list in any message (HTTP 500, "can only
    concatenate str (not "list") to str"): a provider that met either sends strings from
    then on. Images and other parts stay a list: no string can carry them."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    if not all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return message
    return {**message, "content": "".join(str(p.get("text", "")) for p in content)}


def _wants_strings(error: BaseException) -> bool:
    """A server's refusal of a message whose content is a list (see ``_plain_text``)."""
    text = str(error)
    schema = "ChatCompletionRequestAssistantMessage" in text and "valid string" in text
    return schema or 'can only concatenate str (not "list") to str' in text


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
            max_tokens_param=self.max_tokens_param,
        )
        if self._plain_text:
            request["messages"] = [_plain_text(m) for m in request["messages"]]
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
