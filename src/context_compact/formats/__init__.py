"""The caller's format in, the same format out: Anthropic (canonical), OpenAI Chat Completions,
OpenAI Responses.

The engines work on Anthropic-shaped dicts; ``Compactor(..., format=...)`` converts at its
edge (``edge.py``), so ``prepare`` takes the caller's list as its SDK or framework builds it
and returns the view in the same format, with the caller's system messages first and the
tool-call ids unchanged. Each converter is public:

    from context_compact.formats import openai_responses
    system, messages = openai_responses.to_canonical(items)
    items = openai_responses.from_canonical(messages, system)

``detect(messages)`` names the format a list is in, or None while nothing in it decides
(plain ``{"role", "content": str}`` messages read the same in all three).
"""

from __future__ import annotations

from collections.abc import Sequence

from . import anthropic, openai_chat, openai_responses
from .base import PASSTHROUGH, Converter, Unit

FORMATS = (anthropic.NAME, openai_chat.NAME, openai_responses.NAME)
CONVERTERS: dict[str, Converter] = {
    openai_chat.NAME: openai_chat.CONVERTER,
    openai_responses.NAME: openai_responses.CONVERTER,
}

_ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "document", "image"}
)
_RESPONSES_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file"})
_CHAT_PARTS = frozenset({"image_url", "input_audio", "refusal", "file"})


def _by_module(value: object) -> str | None:
    module = type(value).__module__
    if module.startswith("anthropic."):
        return anthropic.NAME
    if module.startswith("openai.types.chat"):
        return openai_chat.NAME
    if module.startswith("openai.types.responses"):
        return openai_responses.NAME
    return None


def _by_part(part: object) -> str | None:
    if not isinstance(part, dict):
        return _by_module(part)
    kind = part.get("type")
    if kind in _ANTHROPIC_BLOCKS:
        return anthropic.NAME
    if kind in _RESPONSES_PARTS:
        return openai_responses.NAME
    if kind in _CHAT_PARTS:
        return openai_chat.NAME
    return None


def _of(item: object) -> str | None:
    if not isinstance(item, dict):
        return _by_module(item)
    if "type" in item:
        return openai_responses.NAME
    role = item.get("role")
    if role in ("tool", "function") or "tool_calls" in item:
        return openai_chat.NAME
    content = item.get("content")
    if isinstance(content, list):
        for part in content:
            found = _by_part(part)
            if found:
                return found
    return None


def detect(messages: object) -> str | None:
    """``"anthropic"``, ``"openai-chat"`` or ``"openai-responses"`` from the first item that
    decides, or None when nothing does."""
    if not isinstance(messages, list):
        return None
    for item in messages:
        found = _of(item)
        if found:
            return found
    return None


def has_system(messages: Sequence[object]) -> bool:
    """Whether the list holds a system or developer message (not Anthropic, then)."""
    return any(isinstance(m, dict) and m.get("role") in ("system", "developer") for m in messages)


__all__ = [
    "CONVERTERS",
    "FORMATS",
    "PASSTHROUGH",
    "Converter",
    "Unit",
    "anthropic",
    "detect",
    "has_system",
    "openai_chat",
    "openai_responses",
]
