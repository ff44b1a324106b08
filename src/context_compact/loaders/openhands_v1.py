"""OpenHands V1 event logs (software-agent-sdk, the OpenHands CLI and agent server).

V1 persists a conversation as typed events, each a JSON object whose ``kind`` names its class:
one file per event (``<conversation>/events/event-00000-<id>.json``, how the SDK's event
store writes them), or the same objects one per line (``.jsonl``), in a JSON list, or in a
page of the agent server's event search (``{"items": [...], "next_page_id": ...}``). A file
or an events folder is one session; a folder's events are read in file-name order (the
index in the name), and the session is named by the conversation folder. The
``base_state.json`` beside ``events`` holds settings, not conversation: a folder import
passes over it.

What each kind becomes (the SDK's own ``to_llm_message`` projection, so the history is what
the model was sent):

* ``SystemPromptEvent``: ``system_prompt.text`` (and ``dynamic_context.text``) form
  ``Session.system``; the tool definitions are not conversation.
* ``MessageEvent``: ``llm_message`` (``role``, ``content`` parts, images as ``[image]``) plus
  ``extended_content``, as text of its role (a ``system`` role stays in place as user text).
* ``ActionEvent``: its ``thought`` as text and a ``tool_use`` (id ``tool_call_id``, name
  ``tool_name``, input the parsed ``tool_call.arguments``); actions sharing an
  ``llm_response_id`` are one response (parallel calls) and form one assistant message.
  ``reasoning_content`` not already in the thought is kept as text ``[reasoning] ...``
  (``Session.converted``: ``reasoning_as_text``); Anthropic thinking blocks are left out
  (their signatures tie them to the original request).
* ``ObservationEvent`` / ``AgentErrorEvent`` / ``UserRejectObservation``: the
  ``tool_result`` for ``tool_call_id`` (the observation's content, the error, or
  ``Action rejected: <reason>``), ``is_error`` kept. One whose action is not in the log
  (a trimmed log) becomes user text, counted ``orphan_tool_result``.
* ``CondensationSummaryEvent``: the summary, as user text where it was.
* Bookkeeping never sent to the model is dropped without being counted: state updates,
  ``Condensation`` / ``CondensationRequest`` (the condenser's view of the history, which is
  kept whole here), pause/interrupt, token and streaming deltas, completion logs, hooks and
  conversation errors. Any other kind is skipped and counted under its name
  (``unknown_event:<kind>``; ``no_kind`` for an object without one).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ._common import (
    Block,
    HistoryBuilder,
    Limits,
    Session,
    TooLarge,
    join_system,
    make_session,
    parse_arguments,
    read_text,
    stem,
    text_block,
    text_blocks,
    text_of,
    tool_result_block,
    tool_use_block,
    unknown_format,
)

FORMAT = "openhands_v1"

EVENT_FILE = re.compile(r"event-\d+.*\.json")

KINDS = frozenset(
    {
        "SystemPromptEvent",
        "MessageEvent",
        "ActionEvent",
        "ObservationEvent",
        "AgentErrorEvent",
        "UserRejectObservation",
        "CondensationSummaryEvent",
    }
)
_BOOKKEEPING = frozenset(
    {
        "ConversationStateUpdateEvent",
        "Condensation",
        "CondensationRequest",
        "PauseEvent",
        "InterruptEvent",
        "TokenEvent",
        "StreamingDeltaEvent",
        "LLMCompletionLogEvent",
        "HookExecutionEvent",
        "ConversationErrorEvent",
    }
)


def is_event(record: Any) -> bool:
    """A V1 event: an object whose ``kind`` is one of the SDK's event classes."""
    if not isinstance(record, dict):
        return False
    kind = record.get("kind")
    return isinstance(kind, str) and (kind in KINDS or kind in _BOOKKEEPING)


def is_page(document: Any) -> bool:
    """The agent server's page of events (``{"items": [event, ...], ...}``)."""
    items = document.get("items") if isinstance(document, dict) else None
    return isinstance(items, list) and any(is_event(item) for item in items)


def events_of(data: Any) -> list[Any]:
    """The events of a parsed file: a list, a page's ``items``, or one event."""
    if isinstance(data, list):
        return data
    return list(data["items"]) if is_page(data) else [data]


def is_events_dir(path: Path) -> bool:
    """A folder of V1 event files (``event-00000-<id>.json``)."""
    return path.is_dir() and any(EVENT_FILE.fullmatch(p.name) for p in path.iterdir())


def is_state_file(path: Path) -> bool:
    """The conversation's ``base_state.json`` (agent and LLM settings, no conversation),
    kept beside its ``events`` folder."""
    return path.name == "base_state.json" and is_events_dir(path.parent / "events")


def load_directory(path: Path, limits: Limits | None = None) -> list[Session]:
    """The session of an events folder, named by the conversation folder holding it.

    An event file is held to the per-line limit (one event is one line of the JSON Lines
    form) and the folder's total to the per-file limit (``TooLarge``)."""
    limits = limits or Limits()
    files = sorted(p for p in path.iterdir() if p.is_file() and EVENT_FILE.fullmatch(p.name))
    events: list[Any] = []
    bad = 0
    total = 0
    for file in files:
        size = file.stat().st_size
        total += size
        if size > limits.line_bytes:
            raise TooLarge(
                f"{file}: {size:,} bytes, over the limit of {limits.line_bytes:,} per event "
                "(raise it with --max-line-bytes)"
            )
        if total > limits.file_bytes:
            raise TooLarge(
                f"{path}: over {limits.file_bytes:,} bytes of events "
                "(raise it with --max-file-bytes)"
            )
        try:
            events.append(json.loads(read_text(file, limits)))
        except json.JSONDecodeError:
            bad += 1
    name = path.parent.name if path.name == "events" else path.name
    return [load_events(events, path, name, bad)]


def load_records(records: list[Any], source: str | Path, bad_lines: int = 0) -> list[Session]:
    """The one session of a file of events (JSON Lines, or a JSON list or one object)."""
    return [load_events(records, source, stem(source), bad_lines)]


def load_events(events: list[Any], source: str | Path, name: str, bad: int = 0) -> Session:
    builder = HistoryBuilder()
    builder.skip("unparseable_event", bad)
    converter = _Converter(builder)
    for event in events:
        converter.add(event)
    if not converter.seen:
        raise unknown_format(source, "no OpenHands V1 events (objects with a 'kind')")
    return make_session(name, FORMAT, join_system(converter.system), builder, source)


class _Converter:
    def __init__(self, builder: HistoryBuilder) -> None:
        self.builder = builder
        self.system: list[str] = []
        self.started = False
        self.seen = 0

    def add(self, event: Any) -> None:
        if not isinstance(event, dict):
            self.builder.skip("malformed_event")
            return
        kind = event.get("kind")
        if kind in _BOOKKEEPING:
            self.seen += 1
            return
        if kind not in KINDS:
            self.builder.skip(f"unknown_event:{kind}" if isinstance(kind, str) else "no_kind")
            return
        self.seen += 1
        if kind == "SystemPromptEvent":
            self._system(event)
        elif kind == "MessageEvent":
            self._message(event)
        elif kind == "ActionEvent":
            self._action(event)
        elif kind == "CondensationSummaryEvent":
            self.builder.user(text_blocks(event.get("summary")))
        else:
            self._observation(kind, event)

    def _system(self, event: dict[str, Any]) -> None:
        parts = [text_of(event.get("system_prompt")), text_of(event.get("dynamic_context"))]
        if self.started:
            self.builder.user(text_blocks("\n\n".join(p for p in parts if p)))
        else:
            self.system.extend(parts)

    def _message(self, event: dict[str, Any]) -> None:
        message = event.get("llm_message")
        if not isinstance(message, dict):
            self.builder.skip("malformed_event")
            return
        self.started = True
        content = message.get("content")
        parts = list(content) if isinstance(content, list) else [content]
        extended = event.get("extended_content")
        if isinstance(extended, list):
            parts.extend(extended)
        blocks = text_blocks(parts)
        if message.get("role") == "assistant":
            self.builder.assistant(blocks, key=event.get("llm_response_id"))
        else:
            self.builder.user(blocks)

    def _action(self, event: dict[str, Any]) -> None:
        call = event.get("tool_call")
        call = call if isinstance(call, dict) else {}
        call_id = event.get("tool_call_id") or call.get("id")
        if not isinstance(call_id, str) or not call_id:
            self.builder.skip("malformed_event")
            return
        self.started = True
        thought = text_of(event.get("thought"))
        blocks: list[Block] = text_blocks(thought)
        reasoning = event.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning.strip() and reasoning.strip() not in thought:
            blocks.insert(0, text_block(f"[reasoning] {reasoning.strip()}"))
            self.builder.convert("reasoning_as_text")
        arguments, parsed = parse_arguments(call.get("arguments"))
        if not parsed:
            self.builder.skip("unparsed_arguments")
        name = event.get("tool_name") or call.get("name") or ""
        blocks.append(tool_use_block(call_id, str(name), arguments))
        key = event.get("llm_response_id")
        self.builder.assistant(blocks, key=key if isinstance(key, str) else f"event:{call_id}")

    def _observation(self, kind: str, event: dict[str, Any]) -> None:
        call_id = event.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            self.builder.skip("malformed_event")
            return
        error = False
        if kind == "AgentErrorEvent":
            content, error = text_of(event.get("error")), True
        elif kind == "UserRejectObservation":
            reason = text_of(event.get("rejection_reason")) or "User rejected the action"
            content = f"Action rejected: {reason}"
        else:
            observation = event.get("observation")
            observation = observation if isinstance(observation, dict) else {}
            parts = observation.get("content")
            extended = event.get("extended_content")
            content = text_of(
                (parts if isinstance(parts, list) else [parts])
                + (extended if isinstance(extended, list) else [])
            )
            error = observation.get("is_error") is True
        result = tool_result_block(call_id, content)
        if error:
            result["is_error"] = True
        self.builder.user([result])
