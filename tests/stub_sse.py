"""Server-sent event streams for ``stub_api``: a rendered reply, replayed as the APIs stream it.

Each function takes the complete (non-streamed) body that ``stub_api`` renders for a reply
and cuts it into the events the real service sends for ``"stream": true``, so a streamed and
a plain answer to the same script item carry the same content and usage:

- Anthropic Messages: ``message_start`` (usage with the input counts), ``ping``, per content
  block ``content_block_start``, ``content_block_delta`` (``text_delta``, ``thinking_delta``
  and ``signature_delta``, ``input_json_delta``), ``content_block_stop``; ``message_delta``
  (stop reason, cumulative usage) and ``message_stop``.
- OpenAI Chat Completions: ``chat.completion.chunk`` objects with ``choices[].delta`` (the
  role, content pieces, ``tool_calls`` deltas by index: id and name first, then argument
  pieces), a chunk with the ``finish_reason``, a usage chunk with empty ``choices`` when the
  request asked ``stream_options.include_usage``, then ``data: [DONE]``.
- OpenAI Responses: ``response.created``, ``response.in_progress``, per output item
  ``response.output_item.added`` ... ``response.output_item.done`` (with the content part,
  ``response.output_text.delta``/``.done`` or ``response.function_call_arguments.delta``/
  ``.done`` between), then ``response.completed`` carrying the whole response and its usage.

The shapes follow what the installed SDKs' stream accumulators read
(``anthropic/lib/streaming/_messages.py``, ``openai/lib/streaming/chat/_completions.py``,
``openai/lib/streaming/responses/_responses.py``). ``error_event`` renders the error a
service sends mid-stream, after the HTTP 200 (Anthropic's ``event: error``).
"""

from __future__ import annotations

import copy
import json
from typing import Any

PIECE = 7  # characters per text or JSON delta: small, so deltas really accumulate


def pieces(text: str) -> list[str]:
    return [text[i : i + PIECE] for i in range(0, len(text), PIECE)] or [""]


def sse(event: str | None, data: Any) -> bytes:
    head = f"event: {event}\n" if event else ""
    body = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {body}\n\n".encode()


# -- Anthropic -----------------------------------------------------------------------------


def anthropic_events(message: dict[str, Any]) -> list[bytes]:
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {**usage, "output_tokens": 1}
    events = [sse("message_start", {"type": "message_start", "message": start})]
    events.append(sse("ping", {"type": "ping"}))
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "text":
            empty: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in pieces(block["text"])]
        elif kind == "thinking":
            empty = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        else:
            empty = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": p}
                for p in pieces(json.dumps(block["input"]))
            ]
        events.append(
            sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": empty},
            )
        )
        for delta in deltas:
            events.append(
                sse(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        events.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]}
    events.append(
        sse("message_delta", {"type": "message_delta", "delta": delta, "usage": dict(usage)})
    )
    events.append(sse("message_stop", {"type": "message_stop"}))
    return events


def anthropic_error_event(kind: str, message: str) -> bytes:
    return sse("error", {"type": "error", "error": {"type": kind, "message": message}})


# -- OpenAI chat ---------------------------------------------------------------------------


def chat_chunks(completion: dict[str, Any], request: Any) -> list[bytes]:
    body = request if isinstance(request, dict) else {}
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    choice = completion["choices"][0]
    message = choice["message"]
    head = {k: completion[k] for k in ("id", "created", "model")}
    head |= {"object": "chat.completion.chunk", "system_fingerprint": None}
    if include_usage:
        head["usage"] = None  # every chunk carries the key; only the last one a value

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choices = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        return sse(None, {**head, "choices": choices})

    chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
    if message["content"] is not None:
        chunks += [chunk({"content": p}) for p in pieces(message["content"])]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = {"name": call["function"]["name"], "arguments": ""}
        first = {"index": index, "id": call["id"], "type": "function", "function": function}
        chunks.append(chunk({"tool_calls": [first]}))
        for part in pieces(call["function"]["arguments"]):
            chunks.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
            )
    chunks.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        chunks.append(sse(None, {**head, "choices": [], "usage": completion["usage"]}))
    return [*chunks, sse(None, "[DONE]")]


def chat_error_chunk(kind: str, message: str) -> bytes:
    return sse(None, {"error": {"message": message, "type": kind, "param": None, "code": None}})


# -- OpenAI Responses ----------------------------------------------------------------------


def responses_events(response: dict[str, Any]) -> list[bytes]:
    events: list[tuple[str, dict[str, Any]]] = []
    pending = {**response, "status": "in_progress", "output": [], "usage": None}
    events.append(("response.created", {"response": pending}))
    events.append(("response.in_progress", {"response": pending}))
    for index, item in enumerate(response["output"]):
        at = {"output_index": index}
        if item["type"] == "message":
            events.append(
                (
                    "response.output_item.added",
                    {**at, "item": {**item, "status": "in_progress", "content": []}},
                )
            )
            for number, part in enumerate(item["content"]):
                where = {**at, "item_id": item["id"], "content_index": number}
                empty = {**part, "text": ""}
                events.append(("response.content_part.added", {**where, "part": empty}))
                for piece in pieces(part["text"]):
                    events.append(
                        ("response.output_text.delta", {**where, "delta": piece, "logprobs": []})
                    )
                events.append(
                    ("response.output_text.done", {**where, "text": part["text"], "logprobs": []})
                )
                events.append(("response.content_part.done", {**where, "part": part}))
        elif item["type"] == "function_call":
            added = {**item, "arguments": "", "status": "in_progress"}
            events.append(("response.output_item.added", {**at, "item": added}))
            where = {**at, "item_id": item["id"]}
            for piece in pieces(item["arguments"]):
                events.append(("response.function_call_arguments.delta", {**where, "delta": piece}))
            events.append(
                (
                    "response.function_call_arguments.done",
                    {**where, "name": item["name"], "arguments": item["arguments"]},
                )
            )
        else:
            events.append(("response.output_item.added", {**at, "item": copy.deepcopy(item)}))
        events.append(("response.output_item.done", {**at, "item": item}))
    final = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
    events.append((final, {"response": response}))
    return [
        sse(kind, {"type": kind, **data, "sequence_number": number})
        for number, (kind, data) in enumerate(events)
    ]


def responses_error_event(kind: str, message: str, number: int) -> bytes:
    data = {"type": "error", "code": kind, "message": message, "param": None}
    return sse("error", {**data, "sequence_number": number})
