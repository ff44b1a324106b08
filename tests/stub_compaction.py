"""The Messages API's own compaction, for ``stub_api``: both modes and their rules.

- **Threshold** (``context_management`` edit ``compact_20260112``, beta
  ``compact-2026-01-12``): when the input, counted from the newest compaction block on (the
  API drops what comes before one), passes the edit's ``trigger`` (``input_tokens``, default
  150,000, at least 50,000), the response opens with a ``compaction`` block whose ``content``
  summarizes the conversation; with ``pause_after_compaction`` the block comes alone
  (``stop_reason: "compaction"``).
- **On demand** (``compaction={"type": "summarize"}``, beta ``compact-2026-09-04``): the
  response holds only the block, ``stop_reason: "compaction"``; nothing is sampled.

The stub signs each block it issues over its ``content``, ``encrypted_content`` and
``tool_changes`` and remembers the system prompt and tools of the request that made it. A
request is refused with the API's 400 ``invalid_request_error`` when it sends ``compaction``
with ``context_management``, when a block the stub issued comes back altered (``Invalid
`signature```), anywhere but first (the first block of the first message: the SDK's own
runner sends it there), or with another system prompt or other tools than the request that
made it. The wordings other than the signature's are the stub's: the real API's are not
published.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

SIGNATURE_PREFIX = "stubcmp-"
DEFAULT_TRIGGER = 150_000
MINIMUM_TRIGGER = 50_000


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def sign(block: dict[str, Any]) -> str:
    fields = [block.get("content"), block.get("encrypted_content"), block.get("tool_changes")]
    return SIGNATURE_PREFIX + _digest(fields)


def _blocks(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def chars_over_four(messages: list[Any]) -> int:
    return len(json.dumps(messages, default=str)) // 4


def _fixed(body: dict[str, Any]) -> str:
    return _digest([body.get("system"), body.get("tools")])


def _text_of(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    parts = []
    for block in _blocks(message):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "tool_use":
            parts.append(f"called {block.get('name')} {json.dumps(block.get('input'))}")
        elif kind == "tool_result":
            inner = block.get("content")
            parts.append(str(inner if isinstance(inner, str) else json.dumps(inner))[:60])
        elif kind == "compaction":
            parts.append(str(block.get("content") or ""))
    return " ".join(parts)


class Compactions:
    """What the stub knows of the compaction blocks it issued."""

    def __init__(
        self, count: Callable[[list[Any]], int] = chars_over_four, minimum: int = MINIMUM_TRIGGER
    ) -> None:
        self.count = count
        self.minimum = minimum
        self.issued: dict[str, str] = {}  # signature -> digest of the system prompt and tools
        self.blocks: list[dict[str, Any]] = []  # every block issued, oldest first
        self.requests = 0  # Messages requests seen (``StubAPI`` counts them)
        self.issued_at: list[int] = []  # for each block: the requests seen when it was issued

    # -- the rules ---------------------------------------------------------------------------
    def violation(self, body: Any) -> str | None:
        if not isinstance(body, dict):
            return None
        if body.get("compaction") is not None and body.get("context_management") is not None:
            return "`compaction` cannot be combined with `context_management`"
        edit = self._edit(body)
        if edit is not None:
            trigger = (edit.get("trigger") or {}).get("value", DEFAULT_TRIGGER)
            if trigger < self.minimum:
                return (
                    f"context_management.edits.0.trigger.value: must be at least "
                    f"{self.minimum}, got {trigger}"
                )
        for i, message in enumerate(body.get("messages") or []):
            for k, block in enumerate(_blocks(message)):
                if not isinstance(block, dict) or block.get("type") != "compaction":
                    continue
                signature = str(block.get("signature") or "")
                if not signature.startswith(SIGNATURE_PREFIX):
                    continue
                where = f"messages.{i}.content.{k}"
                if signature not in self.issued or sign(block) != signature:
                    return f"{where}: Invalid `signature` in `compaction` block"
                if (i, k) != (0, 0):
                    return (
                        f"{where}: a `compaction` block must be the first content block of "
                        "the first message; send it first, in place of the messages it "
                        "summarizes"
                    )
                if self.issued[signature] != _fixed(body):
                    return (
                        f"{where}: a `compaction` block must be sent with the same `system` "
                        "and `tools` as the request that produced it"
                    )
        return None

    @staticmethod
    def _edit(body: dict[str, Any]) -> dict[str, Any] | None:
        management = body.get("context_management")
        edits = management.get("edits") if isinstance(management, dict) else None
        for edit in edits or []:
            if isinstance(edit, dict) and edit.get("type") == "compact_20260112":
                return edit
        return None

    # -- the answers -------------------------------------------------------------------------
    def _block(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages") or []
        first = next((_text_of(m) for m in messages if m.get("role") == "user"), "")
        calls = [
            b.get("input")
            for m in messages
            for b in _blocks(m)
            if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
        summary = (
            f"Summary of {len(messages)} messages. The task: {first[:300]} "
            f"Tool calls so far: {len(calls)}; the last: {json.dumps(calls[-1:])}."
        )
        block: dict[str, Any] = {
            "type": "compaction",
            "content": summary,
            "encrypted_content": f"stub-enc-{len(self.blocks):04d}",
            "tool_changes": [],
        }
        block["signature"] = sign(block)
        self.issued[block["signature"]] = _fixed(body)
        self.blocks.append(block)
        self.issued_at.append(self.requests)
        return block

    def on_demand(self, body: Any) -> bool:
        return isinstance(body, dict) and isinstance(body.get("compaction"), dict)

    def summarize(self, body: dict[str, Any], number: int) -> dict[str, Any]:
        """The answer to an on-demand compaction request: the block alone."""
        tokens = self.count(body.get("messages") or [])
        return {
            "id": f"msg_stub_{number:04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "stub"),
            "content": [self._block(body)],
            "stop_reason": "compaction",
            "stop_sequence": None,
            "usage": {
                "input_tokens": tokens,
                "output_tokens": 200,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0,
            },
        }

    def threshold(self, body: Any, answer: dict[str, Any]) -> dict[str, Any]:
        """``answer`` opened with a compaction block when the request's own edit fires."""
        if not isinstance(body, dict):
            return answer
        edit = self._edit(body)
        if edit is None:
            return answer
        messages = list(body.get("messages") or [])
        since = 0
        for i, message in enumerate(messages):
            if any(
                isinstance(b, dict) and b.get("type") == "compaction" and b.get("content")
                for b in _blocks(message)
            ):
                since = i
        trigger = (edit.get("trigger") or {}).get("value", DEFAULT_TRIGGER)
        if self.count(messages[since:]) <= trigger:
            return answer
        block = self._block(body)
        if edit.get("pause_after_compaction"):
            return {**answer, "content": [block], "stop_reason": "compaction"}
        return {**answer, "content": [block, *answer["content"]]}


__all__ = ["Compactions", "chars_over_four", "sign"]
