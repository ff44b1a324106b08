"""Tell a "the prompt does not fit" refusal apart from every other API failure.

The agent loop reacts to a context overflow by compacting the history and retrying; any
other error (rate limit, overload, bad key, dropped connection, malformed request) must
propagate untouched, because compacting would not fix it and retrying would hide it.

``is_context_overflow`` reads the exception duck-typed (``status_code``, ``body``, ``code``,
``type``, ``error_code``, ``message``), so it works on exceptions of both SDKs and on any
look-alike without importing ``anthropic`` or ``openai``. It decides in this order:

1. Status codes that never mean overflow (401, 402, 403, 404, 408, 429) give ``False``;
   a 429 says "too many tokens *per minute*", which compaction does not cure.
2. A machine-readable identifier that names the overflow gives ``True``:
   ``context_length_exceeded`` (OpenAI ``code``), ``exceed_context_size_error``
   (llama.cpp ``type``; early builds sent it with HTTP 500, so it wins over a 5xx) and
   ``request_too_large`` (Anthropic 413 ``type``). Any HTTP 413 is also ``True``.
3. Other 5xx (500, 503, Anthropic's 529 ``overloaded_error``) give ``False``.
4. Otherwise the error text decides, for 4xx errors and for exceptions without a status.

Error shapes this relies on (as quoted in public reports and docs):

- Anthropic 400: ``{"type": "error", "error": {"type": "invalid_request_error",
  "message": "prompt is too long: 209353 tokens > 199999 maximum"}}``
  (entropy-research/Devon#88, anthropics/claude-code#14195) and ``"input length and
  `max_tokens` exceed context limit: 178959 + 64000 > 200000, decrease input length or
  `max_tokens` and try again"`` (docker/docker-agent#569, continuedev/continue#6080).
- Anthropic 413 ``request_too_large`` and 529 ``overloaded_error``:
  https://docs.claude.com/en/api/errors.
- OpenAI Chat Completions 400: ``{"error": {"message": "This model's maximum context
  length is 8192 tokens. However, your messages resulted in 8202 tokens. ...", "type":
  "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}``
  (dimagi/open-chat-studio#463); Responses API: ``"Your input exceeds the context window
  of this model. Please adjust your input and try again."`` with the same code
  (anomalyco/opencode#6071); GPT-5: ``"Input tokens exceed the configured limit of 272000
  tokens. Your messages resulted in 289650 tokens."`` (cline/cline#5474).
- llama.cpp server: ``{"error": {"code": 400, "message": "the request exceeds the
  available context size, try increasing it", "type": "exceed_context_size_error",
  "n_prompt_tokens": ..., "n_ctx": ...}}`` (ggml-org/llama.cpp#15780 introduced the type
  with code 500; ggml-org/llama.cpp#17284 shows the 400).
- vLLM 400 ``BadRequestError``: ``"This model's maximum context length is 16384 tokens.
  However, you requested 122946 tokens ..."`` (vllm-project/vllm#20409), body either
  ``{"object": "error", ..., "code": 400}`` or wrapped in ``"error"``
  (vllm-project/vllm#4667).

The SDKs keep ``body`` differently: ``anthropic`` keeps the whole response body,
``openai`` keeps only the inner ``"error"`` object. Both are searched.

``overflow_figures`` reads the numbers such a refusal carries (the prompt as the API counted
it, the output budget asked for, the window), so the loop can size its retry: when the
prompt alone fits, a smaller ``max_tokens`` is enough; otherwise the exact count calibrates
the compaction. Every wording above that names numbers is read; one it cannot read gives
``None`` fields, never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeVar

from ..errors import ContextOverflow
from ..telemetry import providers_log

T = TypeVar("T")

__all__ = [
    "OverflowFigures",
    "context_overflow",
    "is_context_overflow",
    "overflow_figures",
    "raising_overflow",
]

_NEVER_OVERFLOW_STATUS = frozenset({401, 402, 403, 404, 408, 429})

_OVERFLOW_IDENTIFIERS = frozenset(
    {"context_length_exceeded", "exceed_context_size_error", "request_too_large"}
)

# Lower-case fragments of the messages quoted in the module docstring.
_OVERFLOW_PHRASES = (
    "prompt is too long",
    "exceed context limit",
    "maximum context length is",
    "exceeds the context window",
    "input tokens exceed the configured limit",
    "exceeds the available context size",
    "exceed context window of",
)

# The seed project matched these loosely; they are kept, but only for a 400 (or an
# exception without a status) so that a rate-limit message mentioning tokens never counts.
_LEGACY_PHRASES = ("prompt_too_long", "too many tokens")


def is_context_overflow(error: BaseException) -> bool:
    """True when ``error`` says the request was refused for not fitting the context window."""
    if isinstance(error, ContextOverflow) or _named_overflow(error):
        return True
    status = _status(error)
    if status in _NEVER_OVERFLOW_STATUS:
        return False
    if not _OVERFLOW_IDENTIFIERS.isdisjoint(_identifiers(error)):
        return True
    if status == 413:
        return True
    if status is not None and not 400 <= status < 500:
        return False
    text = _text(error)
    if any(phrase in text for phrase in _OVERFLOW_PHRASES):
        return True
    return status in (None, 400) and any(phrase in text for phrase in _LEGACY_PHRASES)


# Frameworks' own overflow types, by class name so that none need be imported: pydantic-ai's
# ``ModelContextWindowExceededError`` (its ``__cause__`` is the SDK's error when there is one),
# LiteLLM's ``ContextWindowExceededError`` (whatever the provider's words were).
_OVERFLOW_TYPES = frozenset({"ModelContextWindowExceededError", "ContextWindowExceededError"})


def _named_overflow(error: BaseException) -> bool:
    return any(cls.__name__ in _OVERFLOW_TYPES for cls in type(error).__mro__)


def context_overflow(error: BaseException) -> ContextOverflow | None:
    """``error`` as a ``ContextOverflow`` when it is a refusal for length (any SDK's, a
    framework's, or one already mapped: returned as it is), else None. Raise the result
    ``from error`` so the SDK's exception stays its ``__cause__``."""
    if isinstance(error, ContextOverflow):
        return error
    if not is_context_overflow(error):
        return None
    cause = error.__cause__ if _named_overflow(error) and error.__cause__ is not None else error
    figures = overflow_figures(cause)
    body = getattr(cause, "body", None)
    return ContextOverflow(
        str(getattr(cause, "message", None) or cause),
        prompt_tokens=figures.prompt_tokens,
        max_tokens=figures.max_tokens,
        window=figures.window,
        status_code=_status(cause),
        body=body,
    )


def raising_overflow(send: Callable[[], T]) -> T:
    """``send()``, a refusal for length it raises re-raised as ``ContextOverflow`` (the SDK's
    exception its ``__cause__``); any other error as it was."""
    try:
        return send()
    except Exception as error:
        overflow = context_overflow(error)
        if overflow is None:
            raise
        providers_log.debug("refused for length: %s", error)
        raise overflow from error


def _status(error: BaseException) -> int | None:
    status = getattr(error, "status_code", None)
    if status is None:
        status = getattr(getattr(error, "response", None), "status_code", None)
    if isinstance(status, bool) or not isinstance(status, int):
        return None
    return status


def _error_objects(error: BaseException) -> Iterator[Mapping[str, object]]:
    """The body and, when present, its nested ``"error"`` object."""
    body = getattr(error, "body", None)
    if isinstance(body, Mapping):
        yield body
        inner = body.get("error")
        if isinstance(inner, Mapping):
            yield inner


def _identifiers(error: BaseException) -> set[str]:
    values: list[object] = [getattr(error, name, None) for name in ("code", "type", "error_code")]
    for obj in _error_objects(error):
        values.extend(obj.get(key) for key in ("code", "type"))
    return {value.lower() for value in values if isinstance(value, str)}


def _text(error: BaseException) -> str:
    parts: list[str] = [str(error)]
    for name in ("message", "api_message"):
        value = getattr(error, name, None)
        if isinstance(value, str):
            parts.append(value)
    for obj in _error_objects(error):
        message = obj.get("message")
        if isinstance(message, str):
            parts.append(message)
    return "\n".join(parts).lower()


@dataclass(frozen=True)
class OverflowFigures:
    """What a refusal says in numbers; a field is None when the message does not say it.

    ``prompt_tokens``: the refused request's input as the API counted it; ``max_tokens``:
    the output budget it asked for (only some wordings name it); ``window``: the model's
    context window.
    """

    prompt_tokens: int | None = None
    max_tokens: int | None = None
    window: int | None = None

    @property
    def output_room(self) -> int | None:
        """Tokens left for output once the prompt is in the window (None when unknown)."""
        if self.prompt_tokens is None or self.window is None:
            return None
        return self.window - self.prompt_tokens


_N = r"(\d[\d,]*)"
# (pattern, names of its groups in order); first match wins.
_FIGURES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (
        re.compile(rf"exceed context limit: {_N} \+ {_N} > {_N}"),
        ("prompt_tokens", "max_tokens", "window"),
    ),
    (re.compile(rf"prompt is too long: {_N} tokens > {_N} maximum"), ("prompt_tokens", "window")),
    (
        re.compile(
            rf"maximum context length is {_N} tokens\. however, you requested {_N} tokens"
            rf" \({_N} in the messages, {_N} in the completion\)"
        ),
        ("window", "", "prompt_tokens", "max_tokens"),
    ),
    (
        re.compile(
            rf"maximum context length is {_N} tokens\. however, your messages resulted in {_N}"
        ),
        ("window", "prompt_tokens"),
    ),
    (
        re.compile(rf"configured limit of {_N} tokens\. your messages resulted in {_N}"),
        ("window", "prompt_tokens"),
    ),
    # llama-cpp-python's own exception, before its server rewords it.
    (
        re.compile(rf"requested tokens \({_N}\) exceed context window of {_N}"),
        ("prompt_tokens", "window"),
    ),
    # llama.cpp's newer wording names both counts in the text.
    (
        re.compile(rf"request \({_N} tokens\) exceeds the available context size \({_N} tokens\)"),
        ("prompt_tokens", "window"),
    ),
    # The window alone: llama-cpp-python sends "(2100 in the messages, None in the
    # completion)" when no max_tokens was asked; other servers word the rest their own way.
    (re.compile(rf"maximum context length is {_N} tokens"), ("window",)),
    (re.compile(rf"available context size \({_N} tokens\)"), ("window",)),
    (re.compile(rf"context window of {_N} tokens"), ("window",)),
    (re.compile(rf"\b{_N} tokens > {_N}\b"), ("prompt_tokens", "window")),
    (re.compile(rf"\b{_N} > {_N}\b"), ("prompt_tokens", "window")),
)


def overflow_figures(error: BaseException) -> OverflowFigures:
    """The numbers in an overflow refusal (see ``OverflowFigures``); all None if it has none."""
    for obj in _error_objects(error):
        # llama.cpp sends them as fields.
        prompt, window = _count(obj.get("n_prompt_tokens")), _count(obj.get("n_ctx"))
        if prompt is not None and window is not None:
            return OverflowFigures(prompt_tokens=prompt, window=window)
    text = _text(error)
    for pattern, names in _FIGURES:
        found = pattern.search(text)
        if found is not None:
            values = {
                name: int(value.replace(",", ""))
                for name, value in zip(names, found.groups(), strict=True)
                if name
            }
            return OverflowFigures(**values)
    return OverflowFigures()


def _count(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None
