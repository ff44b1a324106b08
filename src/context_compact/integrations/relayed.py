"""The usage of an Anthropic Messages stream read from its raw server-sent events.

A LiteLLM proxy relays a ``/v1/messages`` stream to its client as the API's own bytes, in
chunks that need not end where an event does. ``EventUsage.feed`` takes each chunk as it
passes and keeps only the unfinished event between chunks: ``message_start`` holds the input
counts, ``message_delta`` the cumulative ones (a count it omits keeps its value), and
``feed`` returns them once, at ``message_stop``. A stream cut before that reports nothing:
there is no usage to trust.
"""

from __future__ import annotations

import codecs
import json

from .streams import merge_usage

__all__ = ["EventUsage"]


class EventUsage:
    """One stream's usage, read as its chunks pass (see the module docstring)."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending = ""
        self._usage: dict[str, int] = {}

    def feed(self, chunk: bytes | str) -> dict[str, int] | None:
        text = self._decoder.decode(chunk) if isinstance(chunk, bytes) else chunk
        *events, self._pending = (self._pending + text).replace("\r\n", "\n").split("\n\n")
        found = None
        for event in events:
            for line in event.split("\n"):
                if line.startswith("data:"):
                    found = self._see(line[5:]) or found
        return found

    def _see(self, data: str) -> dict[str, int] | None:
        try:
            event = json.loads(data)
        except ValueError:
            return None
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "message_start":
            message = event.get("message")
            merge_usage(self._usage, message.get("usage") if isinstance(message, dict) else None)
        elif kind == "message_delta":
            merge_usage(self._usage, event.get("usage"))
        elif kind == "message_stop" and self._usage:
            return dict(self._usage)
        return None
