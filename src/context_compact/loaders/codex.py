"""Codex CLI rollouts (``~/.codex/sessions/.../rollout-*.jsonl``).

Each line is ``{timestamp, type, payload}``. Only ``response_item`` lines are the
model-visible history, as OpenAI Responses API items (``payload.type``):

* ``message``: ``role`` + ``content`` parts (``input_text`` / ``output_text``; images become
  ``[image]``). ``user`` and ``assistant`` map to those roles. ``developer`` / ``system``
  messages before the first user or assistant message form ``Session.system``; later ones
  stay in place as user text.
* ``function_call`` (``call_id``, ``name``, ``arguments``: a JSON string), ``custom_tool_call``
  (``input``: a raw string, kept as ``{"input": ...}``) and ``local_shell_call`` (``action``
  kept as the input) become ``tool_use`` blocks with id ``call_id``.
* ``function_call_output`` / ``custom_tool_call_output`` become ``tool_result`` blocks, paired
  by ``call_id``. ``output`` is kept verbatim when it is a string: that string is what was
  sent back to the model (Codex 0.5x sends shell output as a JSON document
  ``{"output": ..., "metadata": ...}``); lists of content items are flattened.
* ``reasoning``: its readable part (the ``summary`` texts, and ``content`` texts where a model
  writes its reasoning in the clear) becomes a text block ``[reasoning] ...`` in the
  assistant message of its response, so the view and ``recall`` have it (a ``thinking``
  block would need a signature the API checks); counted in ``Session.converted`` as
  ``reasoning_as_text``. One with nothing readable (encrypted only) is skipped and counted
  (``encrypted_reasoning``).
* ``ghost_snapshot`` and encrypted ``compaction`` items are not conversation and are
  dropped; ``web_search_call`` (no output item to pair with) and unknown item types are
  skipped and counted.

``session_meta`` gives ``Session.system`` only when it records ``base_instructions``;
an ``event_msg`` of type ``turn_aborted`` (the user stopped the turn) becomes user text
``[turn aborted: <reason>]`` where it happened, counted as ``turn_aborted_as_text``; other
``turn_context`` and ``event_msg`` lines are UI/runtime data, except that they mark where
one model request ends: items between two of them belong to one response, so parallel
calls written ``call, output, call, output`` are merged into one assistant message. A
``compacted`` line (the summary that replaced the history) stays in place as user text.
Older rollouts without the ``{type, payload}`` wrapper (bare items after a header line)
load the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._common import (
    HistoryBuilder,
    Session,
    join_system,
    make_session,
    parse_arguments,
    read_jsonl,
    stem,
    text_blocks,
    text_of,
    tool_result_block,
    tool_use_block,
)

FORMAT = "codex"

LINE_TYPES = frozenset({"session_meta", "response_item", "turn_context", "event_msg", "compacted"})
CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})
_IGNORED_ITEMS = frozenset({"ghost_snapshot", "compaction", "compaction_summary"})
ITEM_TYPES = CALLS | OUTPUTS | _IGNORED_ITEMS | {"message", "reasoning", "web_search_call"}


def load(path: str | Path) -> list[Session]:
    records, bad = read_jsonl(Path(path))
    return load_records(records, path, bad)


def load_records(records: list[Any], source: str | Path, bad_lines: int = 0) -> list[Session]:
    """The one session of a rollout file."""
    builder = HistoryBuilder()
    builder.skip("unparseable_line", bad_lines)
    state = _State()
    for record in records:
        if not isinstance(record, dict):
            builder.skip("malformed_line")
            continue
        kind = record.get("type")
        payload = record.get("payload")
        if kind == "response_item":
            _add_item(builder, state, payload)
        elif kind in ("turn_context", "event_msg"):
            if isinstance(payload, dict) and payload.get("type") == "turn_aborted":
                reason = text_of(payload.get("reason")) or "no reason given"
                builder.user(text_blocks(f"[turn aborted: {reason}]"))
                builder.convert("turn_aborted_as_text")
            state.request += 1
        elif kind == "session_meta":
            state.system.append(_base_instructions(payload))
        elif kind == "compacted":
            summary = payload.get("message") if isinstance(payload, dict) else None
            builder.user(text_blocks(summary))
            state.request += 1
        elif kind in ITEM_TYPES and "payload" not in record:
            _add_item(builder, state, record)
        elif kind is None and ("record_type" in record or "instructions" in record):
            continue  # legacy header / state lines
        else:
            builder.skip("unknown_line")
    system = join_system(state.system)
    return [make_session(stem(source), FORMAT, system, builder, source)]


class _State:
    def __init__(self) -> None:
        self.request = 0
        self.system: list[str] = []
        self.conversation_started = False


def _base_instructions(payload: Any) -> str:
    if not isinstance(payload, dict):
        return ""
    base = payload.get("base_instructions")
    return text_of(base)


def _add_item(builder: HistoryBuilder, state: _State, item: Any) -> None:
    if not isinstance(item, dict):
        builder.skip("malformed_item")
        return
    kind = item.get("type")
    if kind in _IGNORED_ITEMS:
        return
    if kind == "reasoning":
        _add_reasoning(builder, state, item)
        return
    if kind == "message":
        role = item.get("role")
        blocks = text_blocks(item.get("content"))
        if role == "assistant":
            state.conversation_started = True
            builder.assistant(blocks, key=state.request)
        elif role == "user":
            state.conversation_started = True
            builder.user(blocks)
            state.request += 1
        elif role in ("developer", "system"):
            if state.conversation_started:
                builder.user(blocks)
            else:
                state.system.append(text_of(item.get("content")))
        else:
            builder.skip("unknown_role")
        return
    if kind in CALLS:
        call_id = item.get("call_id") or item.get("id")
        if not isinstance(call_id, str):
            builder.skip("malformed_item")
            return
        if kind == "function_call":
            arguments, parsed = parse_arguments(item.get("arguments"))
            if not parsed:
                builder.skip("unparsed_arguments")
            name = str(item.get("name") or "")
        elif kind == "custom_tool_call":
            arguments = {"input": text_of(item.get("input"))}
            name = str(item.get("name") or "")
        else:
            action = item.get("action")
            arguments = action if isinstance(action, dict) else {}
            name = "local_shell"
        state.conversation_started = True
        builder.assistant([tool_use_block(call_id, name, arguments)], key=state.request)
        return
    if kind in OUTPUTS:
        call_id = item.get("call_id") or item.get("id")
        if not isinstance(call_id, str):
            builder.skip("malformed_item")
            return
        builder.user([tool_result_block(call_id, _output_text(item.get("output")))])
        return
    builder.skip("unsupported_item")


def _add_reasoning(builder: HistoryBuilder, state: _State, item: dict[str, Any]) -> None:
    parts = [
        text_of(part.get("text"))
        for field in ("summary", "content")
        if isinstance(item.get(field), list)
        for part in item[field]
        if isinstance(part, dict)
    ]
    readable = "\n\n".join(part.strip() for part in parts if part.strip())
    if not readable:
        builder.skip("encrypted_reasoning")
        return
    state.conversation_started = True
    builder.assistant(text_blocks(f"[reasoning] {readable}"), key=state.request)
    builder.convert("reasoning_as_text")


def _output_text(output: Any) -> str:
    # Older Codex versions wrote the payload object {content, success} instead of a string.
    if isinstance(output, dict) and "content" in output:
        return text_of(output["content"])
    if isinstance(output, dict):
        return text_of(output) if "text" in output or "output" in output else str(output)
    return text_of(output)
