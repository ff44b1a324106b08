"""The Provider seam: one method that sends a canonical history and returns the reply.

Histories are always canonical (Anthropic-shaped dicts, see ``messages.py``); a provider
translates to its wire format and back. Errors from the SDKs are left as they are: the loop
asks ``is_context_overflow(error)`` whether a refusal means "the prompt is too long".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..messages import Message, ToolUseBlock, is_text, is_tool_use


@dataclass(frozen=True)
class Usage:
    """Token counts reported by the API for one call (zeros when unknown)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        """Every input token of the request, cached or not."""
        return self.input_tokens + self.cache_read_tokens + self.cache_creation_tokens


@dataclass(frozen=True)
class ModelReply:
    """The assistant turn as a canonical message, why the model stopped, and the usage."""

    message: Message
    stop_reason: str = "end_turn"
    usage: Usage = field(default_factory=Usage)
    input_transformations: tuple[Any, ...] = ()
    """What the API changed in the request before the model saw it (Anthropic's
    ``input_transformations``: thinking blocks dropped for a changed prefix)."""

    @property
    def tool_uses(self) -> list[ToolUseBlock]:
        content = self.message.get("content")
        if not isinstance(content, list):
            return []
        return [b for b in content if is_tool_use(b)]

    @property
    def text(self) -> str:
        content = self.message.get("content")
        if isinstance(content, str):
            return content
        return "".join(b.get("text", "") for b in content or [] if is_text(b))


class Provider(Protocol):
    """Anything that can answer a canonical history."""

    name: str
    model: str

    def complete(
        self,
        *,
        system: str,
        messages: list[Message],
        tools: list[dict[str, Any]],
        max_tokens: int,
    ) -> ModelReply: ...
