"""Summaries: the input the summarizer sees, the message that replaces history, the summarizers.

* ``summary_input(messages, limit)`` (S-4.2): the JSON of the history; above ``limit`` its
  first quarter and last three quarters of the limit around a fixed marker.
* ``summary_message(label, request, summary, transcript)`` (S-4.4): the one message every
  kind of compaction puts in place of what it summarized.
* ``LLMSummarizer(provider)`` asks a model (S-4.3) and is a plain callable
  ``summarizer(messages) -> str``, as ``Compactor`` expects.
* ``extractive_summary(messages, request)`` needs no model: files, commands, errors and the
  last words of the assistant, read off the history. The default policy falls back to it
  when the model summarizer fails.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .markers import SUMMARY_OMISSION, SUMMARY_SYSTEM_PROMPT, summary_focus, summary_message
from .messages import block_type, blocks, result_text
from .sizing import to_json

if TYPE_CHECKING:
    from .providers.base import Provider


def summary_input(messages: list[Any], limit: int) -> str:
    """S-4.2: the serialized history, cut to its head quarter and tail three quarters."""
    text = to_json(messages)
    if len(text) <= limit:
        return text
    head = limit // 4
    tail = limit - head
    return text[:head] + SUMMARY_OMISSION + text[len(text) - tail :]


def focused(summarizer: Callable[..., str], instructions: str | None) -> Callable[[list[Any]], str]:
    """``summarizer`` asked to focus on ``instructions`` (``/compact focus on X``).

    A summarizer that takes an ``instructions`` keyword gets it; any other callable sees one
    more user message, ``[Summary focus: ...]``, after the history it summarizes.
    """
    if not instructions:
        return summarizer
    try:
        takes = "instructions" in inspect.signature(summarizer).parameters
    except (TypeError, ValueError):
        takes = False
    if takes:
        return lambda messages: summarizer(messages, instructions=instructions)
    note = summary_focus(instructions)
    return lambda messages: summarizer([*messages, note])


class LLMSummarizer:
    """The seed's summary call (S-4.3) on any Provider: a callable ``(messages) -> str``."""

    def __init__(
        self,
        provider: Provider,
        *,
        input_limit: int = 80_000,
        max_tokens: int = 2_000,
        instructions: str | None = None,
    ) -> None:
        self.provider = provider
        self.input_limit = input_limit
        self.max_tokens = max_tokens
        self.instructions = instructions
        self.calls = 0

    def __call__(self, messages: list[Any], instructions: str | None = None) -> str:
        self.calls += 1
        system = SUMMARY_SYSTEM_PROMPT
        focus = instructions or self.instructions
        if focus:
            system += f" The user asks the summary to focus on: {focus}"
        reply = self.provider.complete(
            system=system,
            messages=[{"role": "user", "content": summary_input(messages, self.input_limit)}],
            tools=[],
            max_tokens=self.max_tokens,
        )
        return reply.text.strip() or "(empty summary)"


_ERRORISH = re.compile(r"^.*\b(?:Error|error|ERROR|Traceback|FAILED|failed|exception)\b.*$", re.M)


def extractive_summary(messages: list[Any], request: str | None = None, limit: int = 4_000) -> str:
    """A summary read off the history without a model: deterministic, bounded by ``limit``."""
    files: dict[str, None] = {}
    commands: list[str] = []
    errors: list[str] = []
    last_text = ""
    first_request = ""
    for message in messages:
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, str) and not first_request:
            first_request = content
        if message.get("role") == "assistant":
            text = "".join(b.get("text", "") for b in blocks(message) if block_type(b) == "text")
            if isinstance(content, str):
                text = content
            if text.strip():
                last_text = text.strip()
        for block in blocks(message):
            kind = block_type(block)
            if kind == "tool_use":
                args = block.get("input") or {}
                if isinstance(args, dict):
                    for key in ("path", "pattern", "file", "filename"):
                        if isinstance(args.get(key), str):
                            files.setdefault(args[key])
                    if isinstance(args.get("command"), str):
                        commands.append(args["command"])
            elif kind == "tool_result":
                text = result_text(block)
                errors.extend(m.group(0).strip()[:200] for m in _ERRORISH.finditer(text[:20_000]))
    parts = []
    if request or first_request:
        parts.append(f"Request: {request or first_request}")
    if files:
        parts.append("Files touched: " + ", ".join(list(files)[-40:]))
    if commands:
        parts.append("Commands run: " + "; ".join(c[:120] for c in commands[-20:]))
    if errors:
        parts.append("Errors seen: " + " | ".join(dict.fromkeys(errors[-10:])))
    if last_text:
        parts.append("Latest assistant note (open work): " + last_text[:800])
    summary = "\n".join(parts) or "(no activity recorded)"
    return summary[:limit]


__all__ = [
    "LLMSummarizer",
    "extractive_summary",
    "focused",
    "summary_input",
    "summary_message",
]
