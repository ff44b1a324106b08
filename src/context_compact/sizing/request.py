"""What a request costs besides the history: its fixed part, and the API's count of it all.

``RequestOverhead`` is the fixed part of every request (the system prompt, the tool schemas),
part by part, each counted again only when it changed: the drop-in clients set it before
every request. ``prompt_tokens_of`` reads the input tokens a usage report counts, whatever
its shape: a ``providers.Usage``, an Anthropic SDK usage (``input_tokens`` plus the cache read and
creation counts), an OpenAI SDK usage (``prompt_tokens``), the same as a dict, or an int.
Anything else counts 0: a figure is never guessed at (booleans are not counts).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class RequestOverhead:
    def __init__(self) -> None:
        self._tokens: dict[str, int] = {}
        self._sources: dict[str, Any] = {}

    def set(self, part: str, source: Any, count: Callable[[], int]) -> int:
        """The whole overhead once ``part`` is ``source``; ``count`` (its tokens) is called
        only when ``source`` differs from the one set last."""
        if self._sources.get(part) != source:
            self._sources[part] = source
            self._tokens[part] = count()
        return sum(self._tokens.values())

    def of(self, part: str) -> int:
        """The tokens ``part`` counts now (0 before it is set)."""
        return self._tokens.get(part, 0)


def prompt_tokens_of(usage: Any) -> int:
    """Every input token a usage report counts, cached or not; 0 when it says nothing."""
    if isinstance(usage, bool):
        return 0
    if isinstance(usage, int):
        return usage

    def get(name: str) -> Any:
        return usage.get(name) if isinstance(usage, dict) else getattr(usage, name, None)

    prompt = get("prompt_tokens")
    if isinstance(prompt, int) and not isinstance(prompt, bool):
        return prompt
    names = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    return sum(v for v in map(get, names) if isinstance(v, int) and not isinstance(v, bool))


__all__ = ["RequestOverhead", "prompt_tokens_of"]
