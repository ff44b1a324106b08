"""The proxy tests' scenario: a stub model that answers every loop from what it is sent, and
the clients' tool loops as the ``openai`` and ``anthropic`` SDKs' docs write them.

``Model`` is the stub's script item for every request: the next ``read_log`` call after the
last tool result (ids ``<loop>_<k>``), the answer after the last step; a request over its
loop's window is refused in the API's own words. It answers chat completions, Messages and
Responses bodies alike, so loops of any route can run through one stub at once.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

import anthropic
import openai

from stub_api import Reply, ToolCall, anthropic_prompt_too_long, openai_context_length_exceeded

LIMIT = 8_000
STEPS = 40
# Loops that show one more thing (a route, a refusal) need not be as long: their history
# passes the window after about 8 steps.
SHORT = dict.fromkeys(
    [
        "messages-to-openai",
        "messages-to-vllm",
        "chat-to-anthropic",
        "refused-chat",
        "refused-messages",
    ],
    16,
)
SYSTEM = "You read logs."
OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_log",
            "description": "Read one part of the service log.",
            "parameters": {
                "type": "object",
                "properties": {"part": {"type": "integer"}},
                "required": ["part"],
            },
        },
    }
]
ANTHROPIC_TOOLS = [
    {
        "name": "read_log",
        "description": "Read one part of the service log.",
        "input_schema": {
            "type": "object",
            "properties": {"part": {"type": "integer"}},
            "required": ["part"],
        },
    }
]


def result(name: str, k: int) -> str:
    """What ``read_log(k)`` returns in loop ``name``: 2 to 6 KB, opening with its own word."""
    size = 2_000 + (k * 7_919 % 5) * 1_000
    line = f"log {k:03d}: worker={k % 7} status=ok latency={k * 13 % 97}ms\n"
    return f"needle-{name}-{k:03d}\n{(line * (size // len(line) + 1))[:size]}"


def size(body: Any) -> int:
    """A request's tokens as the stub counts them: 4 characters a token."""
    return len(json.dumps(body)) // 4


# -- the stub: one model answering every loop from what it is sent ---------------------------


@dataclass
class Seen:
    body: Any
    refused: bool


@dataclass
class Model:
    """The stub's answer to each request, whichever loop sent it: the next ``read_log`` call
    after the last tool result (ids ``<loop>_<k>``), the answer after the last step; a request
    over ``windows[loop]`` (default ``LIMIT``) is refused in the API's own words."""

    windows: dict[str, int] = field(default_factory=dict)
    seen: dict[str, list[Seen]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, body: Any) -> Any:
        anthropic_route = str(body.get("model", "")).startswith("claude")
        name, k = _step(_items(body)[-1])
        tokens = size(body)
        window = self.windows.get(name, LIMIT)
        with self.lock:
            self.seen.setdefault(name, []).append(Seen(body, tokens > window))
        if tokens > window:
            if anthropic_route:
                return anthropic_prompt_too_long(tokens, window)
            return openai_context_length_exceeded(window, tokens)
        if k + 1 >= SHORT.get(name, STEPS):
            return Reply(text="all parts read", input_tokens=tokens)
        call = ToolCall("read_log", {"part": k + 1}, id=f"{name}_{k + 1:03d}")
        return Reply(text=f"reading part {k + 1}", tool_calls=(call,), input_tokens=tokens)

    def bodies(self, name: str) -> list[Any]:
        with self.lock:
            return [s.body for s in self.seen.get(name, [])]

    def refused(self, name: str) -> list[int]:
        with self.lock:
            return [i for i, s in enumerate(self.seen.get(name, [])) if s.refused]


def _items(body: Any) -> list[Any]:
    """A request's history: chat or Messages ``messages``, or a Responses ``input``."""
    return list(body["messages"] if "messages" in body else body["input"])


def _step(last: dict[str, Any]) -> tuple[str, int]:
    """The loop and step a request's last message answers: a tool result ``<loop>_<k>``, or
    the task ``read the log (<loop>)`` (step -1)."""
    called = last.get("tool_call_id") or last.get("call_id")
    if last.get("role") == "tool" or last.get("type") == "function_call_output":
        name, k = called.rsplit("_", 1)
        return name, int(k)
    content = last["content"]
    if isinstance(content, list):
        for block in content:
            if block.get("type") == "tool_result":
                name, k = block["tool_use_id"].rsplit("_", 1)
                return name, int(k)
        content = " ".join(str(b.get("text", "")) for b in content)
    found = re.search(r"\(([\w-]+)\)", content)
    assert found is not None, f"no loop named in {content!r}"
    return found.group(1), -1


# -- the clients' loops, as their SDKs' docs write them ---------------------------------------


def openai_loop(
    client: Any, name: str, *, stream: bool = False, retry: bool = False, **extra: Any
) -> list[Any]:
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"read the log ({name})"},
    ]
    options = {"model": "gpt-test", "tools": OPENAI_TOOLS, **extra}
    while True:
        try:
            if stream:
                with client.chat.completions.stream(
                    messages=messages, stream_options={"include_usage": True}, **options
                ) as events:
                    completion = events.get_final_completion()
            else:
                completion = client.chat.completions.create(messages=messages, **options)
        except openai.BadRequestError:
            if not retry:
                raise
            retry = False  # one retry: the hook sends the recovered view
            continue
        message = completion.choices[0].message
        messages.append(message.model_dump(exclude_none=True, exclude={"parsed"}))
        if not message.tool_calls:
            return messages
        for call in message.tool_calls:
            text = result(name, json.loads(call.function.arguments)["part"])
            messages.append({"role": "tool", "tool_call_id": call.id, "content": text})


def anthropic_loop(
    client: Any, name: str, *, stream: bool = False, retry: bool = False, **extra: Any
) -> list[Any]:
    messages: list[Any] = [{"role": "user", "content": f"read the log ({name})"}]
    options = {
        "model": "claude-test",
        "max_tokens": 1024,
        "system": SYSTEM,
        "tools": ANTHROPIC_TOOLS,
        **extra,
    }
    while True:
        try:
            if stream:
                with client.messages.stream(messages=messages, **options) as events:
                    message = events.get_final_message()
            else:
                message = client.messages.create(messages=messages, **options)
        except anthropic.BadRequestError:
            if not retry:
                raise
            retry = False  # one retry: the hook sends the recovered view
            continue
        dumped = {"exclude_none": True, "exclude": {"parsed_output"}}
        content = [b.model_dump(**dumped) for b in message.content]
        messages.append({"role": "assistant", "content": content})
        calls = [b for b in message.content if b.type == "tool_use"]
        if not calls:
            return messages
        results = [
            {"type": "tool_result", "tool_use_id": c.id, "content": result(name, c.input["part"])}
            for c in calls
        ]
        messages.append({"role": "user", "content": results})
