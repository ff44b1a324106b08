"""The Messages API's prefix check on thinking blocks, as ``stub_api`` enforces it.

On the models that run it (platform.claude.com, "Preserved thinking" and "Prefix checks on
thinking blocks"), each ``thinking`` or ``redacted_thinking`` block is bound to its prefix:
the top-level ``system``, the ``tools`` and everything before the block in the request that
produced it. A later request that sends it back after a different prefix fails the check,
and so does every later thinking block of that request: by default the request is refused
with a 400 naming the first failing block (``messages.N.content.M``); with
``thinking.block_binding.prefix_mismatch_behavior: "drop_block"`` (and the beta header
``thinking-binding-controls-2026-08-01``), or on a model that drops instead of refusing, the
failing blocks are removed and the response lists each in ``input_transformations``.

Here a signature the stub issues is ``stubsig-<hash of the text>-<hash of the prefix>``; the
prefix is hashed in a canonical form (string contents as one text block, ``cache_control``
and null fields left out), since the API compares what the request means, not its bytes.
A signature the stub did not issue is not checked (it cannot know its prefix).

``checker`` applies the same rule to a sequence of requests outside any server: the bench's
and the tests' count of requests that would fail.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

SIGNATURE_PREFIX = "stubsig-"
THINKING = ("thinking", "redacted_thinking")
BETA = "thinking-binding-controls-2026-08-01"
CHECKING = (
    "claude-fable-5-2",
    "claude-mythos-5-2",
    "claude-fable-5-1",
    "claude-mythos-5-1",
    "claude-opus-5-5",
    "claude-sonnet-5-5",
    "claude-haiku-5-5",
)
REFUSAL = (
    "{path}: Invalid `signature` in `thinking` block. The block is bound to a different "
    "conversation. Remove the block, or set "
    '`thinking.block_binding.prefix_mismatch_behavior` to "drop_block".'
)
NEEDS_BETA = (
    f'thinking.block_binding: this field requires the beta header "anthropic-beta: {BETA}".'
)


def text_hash(thinking: str) -> str:
    return hashlib.sha256(thinking.encode("utf-8")).hexdigest()[:24]


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _canonical(v)
            for k, v in sorted(value.items())
            if v is not None and k != "cache_control"
        }
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def _content(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def prefix_hash(body: dict[str, Any], messages: list[Any], partial: list[Any], role: str) -> str:
    """The hash of a block's prefix: system and tools of ``body``, ``messages`` before the
    block's message, and ``partial``, the blocks before it in its own message."""
    system = body.get("system")
    prefix = {
        "system": _content(system) if system is not None else None,
        "tools": body.get("tools"),
        "messages": [
            {"role": m.get("role"), "content": _content(m.get("content"))} for m in messages
        ]
        + [{"role": role, "content": partial}],
    }
    text = json.dumps(_canonical(prefix), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def signature(thinking: str, bound: str) -> str:
    return f"{SIGNATURE_PREFIX}{text_hash(thinking)}-{bound}"


def checks(model: Any) -> bool:
    return isinstance(model, str) and any(model.startswith(name) for name in CHECKING)


def sign_reply(body: dict[str, Any], content: list[dict[str, Any]]) -> None:
    """Bind each thinking block of a reply to ``body`` (the request that produced it)."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    for index, block in enumerate(content):
        if block.get("type") == "thinking":
            bound = prefix_hash(body, messages, content[:index], "assistant")
            block["signature"] = signature(str(block.get("thinking")), bound)


def _bound(block: dict[str, Any]) -> str | None:
    """The prefix hash a stub signature carries, or None (not ours, or unbound)."""
    sig = str(block.get("signature") or block.get("data") or "")
    if not sig.startswith(SIGNATURE_PREFIX):
        return None
    parts = sig[len(SIGNATURE_PREFIX) :].split("-")
    return parts[1] if len(parts) == 2 else None


def failing(body: dict[str, Any]) -> list[str]:
    """The paths (``messages.N.content.M``) of the thinking blocks of ``body`` that fail the
    prefix check: the first whose prefix changed, and every thinking block after it."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return []
    found: list[str] = []
    start: tuple[int, int] | None = None
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        content = _content(message.get("content"))
        for j, block in enumerate(content):
            if isinstance(block, dict) and block.get("type") == "compaction":
                # The API wrote this summary: it accepts it in place of what it replaced
                # before the kept turns ("Compaction and preserved thinking"); the stub does
                # not model what it replaced, so it checks only what comes after.
                found = []
                start = (i, j)
            if not isinstance(block, dict) or block.get("type") not in THINKING:
                continue
            if found:
                found.append(f"messages.{i}.content.{j}")
                continue
            bound = _bound(block)
            if bound is None:
                continue
            role = str(message.get("role"))
            if start is not None:
                continue
            if prefix_hash(body, messages[:i], content[:j], role) != bound:
                found.append(f"messages.{i}.content.{j}")
    return found


def vouched(body: dict[str, Any], start: int) -> bool:
    """Whether a thinking block after message ``start`` carries a stub signature bound to
    the prefix it has in ``body``: a block made on a view where the messages before it,
    ``start`` included, were as they are now (how the API can tell that a turn's opening
    block was dropped by itself, not by the caller)."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return False
    for i in range(start + 1, len(messages)):
        message = messages[i]
        content = _content(message.get("content")) if isinstance(message, dict) else []
        for j, block in enumerate(content):
            bound = _bound(block) if isinstance(block, dict) else None
            if bound is not None and block.get("type") in THINKING:
                role = str(message.get("role"))
                if prefix_hash(body, messages[:i], content[:j], role) == bound:
                    return True
    return False


def behavior(body: dict[str, Any], headers: dict[str, str]) -> tuple[str | None, str | None]:
    """(the prefix-mismatch behavior the request asks for, an error for asking without the
    beta header)."""
    thinking = body.get("thinking")
    binding = thinking.get("block_binding") if isinstance(thinking, dict) else None
    asked = binding.get("prefix_mismatch_behavior") if isinstance(binding, dict) else None
    if asked is None:
        return None, None
    if BETA not in headers.get("anthropic-beta", ""):
        return None, NEEDS_BETA
    return str(asked), None


def without(body: dict[str, Any], paths: Iterable[str]) -> dict[str, Any]:
    """``body`` with the blocks at ``paths`` removed (what the model is shown in drop mode)."""
    drop = {tuple(int(p) for p in path.split(".")[1::2]) for path in paths}
    messages = []
    for i, message in enumerate(body.get("messages") or []):
        content = _content(message.get("content"))
        kept = [b for j, b in enumerate(content) if (i, j) not in drop]
        messages.append({**message, "content": kept})
    return {**body, "messages": messages}


def transformations(paths: list[str]) -> list[dict[str, str]]:
    return [
        {"type": "thinking_dropped", "path": p, "reason": "prefix_binding_mismatch"} for p in paths
    ]


@dataclass
class Checker:
    """The prefix check applied to every request of a session, and what it saw: requests
    that would fail, and of the thinking blocks each reply produced, how many the next
    request still sends (``kept`` of ``produced``)."""

    requests: int = 0
    failed: list[int] = field(default_factory=list)
    produced: int = 0
    kept: int = 0
    _last: set[str] = field(default_factory=set)

    def request(self, body: dict[str, Any]) -> list[str]:
        """Check one request; the paths that fail."""
        self.requests += 1
        bad = failing(body)
        if bad:
            self.failed.append(self.requests)
        sent = {
            str(b.get("thinking", b.get("data")))
            for m in body.get("messages") or []
            for b in _content(m.get("content"))
            if isinstance(b, dict) and b.get("type") in THINKING
        }
        if self._last:
            self.kept += len(self._last & sent)
        self._last = set()
        return bad

    def reply(self, content: list[dict[str, Any]]) -> None:
        """The thinking blocks of the reply to the last request (known by their text)."""
        signatures = {
            str(b.get("thinking", b.get("data"))) for b in content if b.get("type") in THINKING
        }
        self.produced += len(signatures)
        self._last = signatures

    @property
    def kept_share(self) -> float:
        # The last reply's blocks have no next request to be kept by.
        counted = self.produced - len(self._last)
        return self.kept / counted if counted else 1.0
