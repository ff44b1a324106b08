"""Shared machinery of the trajectory loaders: the ``Session`` record, file reading, and the
builder that turns log entries into a valid canonical history.

Every format module feeds its entries, in log order, to a ``HistoryBuilder``:
``assistant(blocks, key)`` and ``user(blocks)``. The builder does two things real logs need:

* **Turn merging.** Several formats write one model response as several entries, with tool
  outputs interleaved (Claude Code writes one block per line and runs each tool as soon as its
  block arrives; OpenHands and Codex record ``call, output, call, output`` for parallel calls).
  Assistant blocks sharing the current turn's ``key`` are appended to that turn's assistant
  message as long as only its tool results came after it, and those results are collected in
  the single user message that follows it.
* **Repair** (``repair``), run once at the end, deterministic, each fix counted in ``notes``:

  - a ``tool_use`` whose id was already used gets the id ``<id>_2`` (``_3``, ...), and the
    matching result in the next message is renamed with it (``duplicate_id``);
  - a ``tool_result`` that answers no ``tool_use`` of the immediately previous assistant
    message becomes a user text block (``orphan_tool_result``);
  - a ``tool_use`` left unanswered by the next message gets a ``tool_result`` with the content
    ``"(no output recorded)"``, in a user message inserted if needed (``unanswered_tool_use``).
    Dropping the call would hide what the model did; a placeholder keeps it and is what an
    agent would send after a crash. A call in the *last* message is left alone: the history
    simply ends while the model waits for it, which the validity rules allow;
  - ``tool_use`` blocks in user messages and ``tool_result`` blocks in assistant messages
    become text (``misplaced_tool_use`` / ``misplaced_tool_result``);
  - in a user message, ``tool_result`` blocks are moved before any other block.

Invariants of every loaded history: roles are ``user``/``assistant`` only; content is always a
list of blocks of type ``text`` (non-blank ``text``), ``tool_use`` (``id``, ``name``, dict
``input``) or ``tool_result`` (``tool_use_id``, string ``content``), and in the ``anthropic``
format also ``image`` and ``document`` (kept to be sent again); tool_use ids are unique;
every result answers a call of the previous message and every call but those of the last
message is answered in the next one. System prompts are never messages.

``Session.skipped`` counts what a loader had to drop against its will (unparseable or
malformed entries, unknown entry types) plus every repair above; ``Session.notes`` breaks it
down by reason, so ``sum(notes.values()) == skipped``. What a format's docstring lists as
not model-visible (progress lines, reasoning items, bookkeeping events, ...) is dropped
without being counted.
"""

from __future__ import annotations

import logging
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..errors import TooLarge as TooLarge  # the loaders' errors, kept importable from here
from ..errors import Undecodable as Undecodable
from ..errors import UnknownFormat as UnknownFormat
from ..messages import Block as Block
from ..messages import Message, ToolResultBlock, is_result, is_tool_use
from ..messages import blocks as blocks_of
from ._blocks import _keep
from ._blocks import parse_arguments as parse_arguments
from ._blocks import text_block as text_block
from ._blocks import text_blocks as text_blocks
from ._blocks import text_of as text_of
from ._blocks import tool_result_block as tool_result_block
from ._blocks import tool_use_block as tool_use_block
from ._reading import Limits as Limits
from ._reading import check_size as check_size
from ._reading import read_jsonl as read_jsonl
from ._reading import read_text as read_text

log = logging.getLogger("context_compact.loaders")


NO_OUTPUT = "(no output recorded)"

FORMATS: list[str] = [
    "claude_code",
    "codex",
    "openhands",
    "openai_chat",
    "mini_swe_agent",
    "swe_agent",
    "anthropic",
    "openhands_v1",
    "aider",
    "results_list",
]


def unknown_format(path: str | Path, reason: str) -> UnknownFormat:
    """``UnknownFormat`` naming the formats the loaders know."""
    return UnknownFormat(path, reason, FORMATS)


@dataclass(frozen=True)
class Session:
    """One recorded trajectory in canonical form.

    ``name`` identifies the trajectory inside its file (file stem, instance id, or
    ``<stem>/sidechain-<n>``); ``format`` is one of ``FORMATS``; ``system`` is the system
    prompt when the log records it; ``skipped`` counts dropped entries and repairs, broken
    down by reason in ``notes``; ``source`` is the path the session was read from;
    ``converted`` counts entries kept in another form than the log's, by kind (a Codex
    reasoning summary kept as text, say): nothing dropped, but not as it was either.
    """

    name: str
    format: str
    system: str | None
    messages: list[Message]
    skipped: int
    source: str
    notes: Mapping[str, int] = field(default_factory=dict)
    converted: Mapping[str, int] = field(default_factory=dict)
    encoding: str = "utf-8"
    """How the file's bytes were decoded: UTF-8 unless the caller named another encoding."""


def stem(source: str | Path) -> str:
    """The file name without its trajectory extensions (``x.traj.json`` -> ``x``)."""
    name = Path(source).name
    for suffix in (".traj.json", ".jsonl", ".json", ".traj"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


# ----------------------------------------------------------------------------- building


class HistoryBuilder:
    """Collects canonical messages in log order; ``build`` repairs and returns them."""

    def __init__(self) -> None:
        self.notes: Counter[str] = Counter()
        self.converted: Counter[str] = Counter()
        self._messages: list[Message] = []
        self._turn: Message | None = None
        self._turn_key: object = None
        self._answer: Message | None = None

    def skip(self, reason: str, count: int = 1) -> None:
        """Count entries dropped for ``reason``."""
        if count:
            self.notes[reason] += count

    def convert(self, kind: str, count: int = 1) -> None:
        """Count entries of ``kind`` kept in another form (``Session.converted``)."""
        if count:
            self.converted[kind] += count

    def assistant(self, blocks: Iterable[Block], key: object = None) -> None:
        """Add model output; blocks with the current turn's ``key`` join that turn."""
        kept = [b for b in blocks if _keep(b)]
        if not kept:
            return
        if key is not None and self._turn is not None and key == self._turn_key and self._at_turn():
            blocks_of(self._turn).extend(kept)
            return
        message: Message = {"role": "assistant", "content": kept}
        self._messages.append(message)
        self._turn, self._turn_key, self._answer = message, key, None

    def user(self, blocks: Iterable[Block]) -> None:
        """Add user-side content; tool results right after a turn join its answer message."""
        kept = [b for b in blocks if _keep(b)]
        if not kept:
            return
        if (
            self._turn is not None
            and self._at_turn()
            and any(b.get("type") == "tool_result" for b in kept)
        ):
            if self._answer is None:
                self._answer = {"role": "user", "content": []}
                self._messages.append(self._answer)
            blocks_of(self._answer).extend(kept)
            return
        self._messages.append({"role": "user", "content": kept})
        self._turn, self._turn_key, self._answer = None, None, None

    def _at_turn(self) -> bool:
        tail = self._messages[-1]
        return tail is self._turn or (self._answer is not None and tail is self._answer)

    def build(self) -> tuple[list[Message], Counter[str]]:
        return repair(self._messages, self.notes), self.notes


def repair(messages: list[Message], notes: Counter[str]) -> list[Message]:
    """A valid history from ``messages`` (see the module docstring); fixes are counted."""
    out: list[Message] = []
    used: set[str] = set()
    waiting: dict[str, deque[str]] = {}
    order: list[str] = []
    for message in messages:
        if message["role"] == "assistant":
            if order:
                notes["unanswered_tool_use"] += len(order)
                out.append(
                    {"role": "user", "content": [tool_result_block(i, NO_OUTPUT) for i in order]}
                )
            waiting, order = {}, []
            blocks: list[Block] = []
            for block in blocks_of(message):
                if is_result(block):
                    notes["misplaced_tool_result"] += 1
                    blocks.append(text_block(_result_as_text(block)))
                    continue
                if is_tool_use(block):
                    original = block["id"]
                    new = original
                    if not new or new in used:
                        new = _fresh_id(original, used)
                        notes["duplicate_id"] += 1
                        block = {**block, "id": new}
                    used.add(new)
                    waiting.setdefault(original, deque()).append(new)
                    order.append(new)
                blocks.append(block)
            out.append({"role": "assistant", "content": blocks})
            continue
        results: list[ToolResultBlock] = []
        rest: list[Block] = []
        for block in blocks_of(message):
            if is_result(block):
                queue = waiting.get(block["tool_use_id"])
                if queue:
                    new = queue.popleft()
                    if new != block["tool_use_id"]:
                        block = {**block, "tool_use_id": new}
                    results.append(block)
                else:
                    notes["orphan_tool_result"] += 1
                    rest.append(text_block(_result_as_text(block)))
            elif is_tool_use(block):
                notes["misplaced_tool_use"] += 1
                rest.append(text_block(f"[tool call {block.get('name')}: {block.get('input')}]"))
            else:
                rest.append(block)
        answered = {b["tool_use_id"] for b in results}
        missing = [i for i in order if i not in answered]
        if missing:
            notes["unanswered_tool_use"] += len(missing)
            results.extend(tool_result_block(i, NO_OUTPUT) for i in missing)
        waiting, order = {}, []
        out.append({"role": "user", "content": [*results, *rest]})
    return out


def _fresh_id(original: str, used: set[str]) -> str:
    base = original or "call"
    n = 2
    while f"{base}_{n}" in used:
        n += 1
    return f"{base}_{n}"


def _result_as_text(block: Block) -> str:
    content = text_of(block.get("content"))
    header = f"[tool result for missing call {block.get('tool_use_id')}]"
    return f"{header}\n{content}" if content else header


def make_session(
    name: str,
    fmt: str,
    system: str | None,
    builder: HistoryBuilder,
    source: str | Path,
) -> Session:
    """Build, repair and wrap a history; log a warning when anything was skipped."""
    messages, notes = builder.build()
    counts = {reason: n for reason, n in sorted(notes.items()) if n}
    skipped = sum(counts.values())
    if skipped:
        detail = ", ".join(f"{reason}={n}" for reason, n in counts.items())
        log.warning("%s (%s): skipped or repaired %d entries: %s", name, source, skipped, detail)
    return Session(
        name=name,
        format=fmt,
        system=system,
        messages=messages,
        skipped=skipped,
        source=str(source),
        notes=counts,
        converted={kind: n for kind, n in sorted(builder.converted.items()) if n},
    )


def join_system(parts: Iterable[str]) -> str | None:
    kept = [p for p in parts if p and p.strip()]
    return "\n\n".join(kept) if kept else None


def openai_tool_calls(builder: HistoryBuilder, calls: Any) -> list[Block]:
    """``tool_use`` blocks from OpenAI-style ``tool_calls``; malformed calls are counted."""
    blocks: list[Block] = []
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(call.get("id"), str):
            builder.skip("malformed_tool_call")
            continue
        arguments, parsed = parse_arguments(function.get("arguments"))
        if not parsed:
            builder.skip("unparsed_arguments")
        blocks.append(tool_use_block(call["id"], str(function.get("name") or ""), arguments))
    return blocks


# Thinking blocks carry signatures tied to the original request; a loaded history replays
# without them (the models' own rule: earlier turns' thinking may be left out).
DROPPED_BLOCKS = frozenset({"thinking", "redacted_thinking"})
KEPT_AS_IS = frozenset({"image", "document"})


def message_blocks(builder: HistoryBuilder, content: Any, malformed: str) -> list[Block]:
    """Canonical blocks of an Anthropic-shaped ``content`` (a string or a list of blocks):
    text, tool_use, tool_result (with ``is_error``), images and documents kept whole; thinking
    left out; anything else counted as ``unsupported_block``; content of another type counted
    as ``malformed``."""
    if isinstance(content, str):
        return [text_block(content)]
    if not isinstance(content, list):
        builder.skip(malformed)
        return []
    out: list[Block] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind in DROPPED_BLOCKS:
            continue
        if kind == "text" and isinstance(block.get("text"), str):
            out.append(text_block(block["text"]))
        elif kind == "tool_use" and isinstance(block.get("id"), str):
            arguments = block.get("input")
            out.append(
                tool_use_block(
                    block["id"],
                    str(block.get("name") or ""),
                    arguments if isinstance(arguments, dict) else {},
                )
            )
        elif kind == "tool_result" and isinstance(block.get("tool_use_id"), str):
            result = tool_result_block(block["tool_use_id"], text_of(block.get("content")))
            if block.get("is_error") is True:
                result["is_error"] = True
            out.append(result)
        elif kind in KEPT_AS_IS:
            out.append(cast(Block, dict(block)))  # a log's block of a kind kept whole
        else:
            builder.skip("unsupported_block")
    return out
