"""An offline Provider that plays back a script, for tests and the demo.

``ScriptedProvider(script)`` answers each ``complete`` call with the next step of
``script``. A step is one of:

- a ``ModelReply``, returned as it is;
- a canonical assistant message dict (or a plain string, taken as a text reply), wrapped in a
  ``ModelReply`` whose stop reason is ``tool_use`` when it holds ``tool_use`` blocks, else
  ``end_turn``;
- an exception instance or class, raised from ``complete`` (a refusal, an outage);
- a callable ``step(messages, system, tools)`` returning any of the above, so a script can
  react to what the loop sent (for example to the last tool results).

Invariants:

- Every call is recorded in ``calls`` with deep copies of what was sent, refused calls and
  the call that finds the script exhausted included. Callables see those copies, so they
  cannot alter the caller's history.
- A served message is a fresh copy; ``tool_use`` blocks without an id get
  ``toolu_fake_0001``, ``toolu_fake_0002``, ... from a counter owned by the provider, so the
  same script always yields the same ids.
- Usage is never zero unless a step says so: a reply without usage reports estimated tokens
  (characters // 4), so token budgets work offline.
- With ``context_window`` set, a request whose estimated input exceeds it is refused with
  ``FakeContextOverflow`` (shaped like Anthropic's HTTP 400) before any step is consumed.
- An exhausted script raises ``ScriptExhausted``, never returns a made-up reply.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable, Iterable
from typing import Any, cast

from ..errors import FakeContextOverflow as FakeContextOverflow  # kept importable from here
from ..errors import ScriptExhausted as ScriptExhausted
from ..messages import Block, Message, ToolUseBlock, block_type, blocks, is_tool_use
from ..providers.base import ModelReply, Usage

StepFunction = Callable[[list[Message], str, list[dict[str, Any]]], Any]
Step = (
    ModelReply | Message | dict[str, Any] | str | BaseException | type[BaseException] | StepFunction
)

_CHARS_PER_TOKEN = 4


def text_reply(text: str) -> Message:
    """An assistant message with one text block."""
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def tool_call(
    name: str, input: dict[str, Any], id: str | None = None, *, text: str | None = None
) -> Message:
    """An assistant message with one ``tool_use`` block (and optional text before it).

    Without ``id`` the provider that serves the message assigns the next ``toolu_fake_NNNN``.
    """
    return tool_calls([(name, input, id)], text=text)


def tool_calls(
    calls: Iterable[tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], str | None]],
    *,
    text: str | None = None,
) -> Message:
    """An assistant message with a batch of ``tool_use`` blocks: ``(name, input[, id])`` each."""
    content: list[Block] = [{"type": "text", "text": text}] if text else []
    for call in calls:
        name, input = call[0], call[1]
        # Without an id until one is given or the provider serving it assigns one (_with_ids).
        block = cast(ToolUseBlock, {"type": "tool_use", "name": name, "input": dict(input)})
        if len(call) > 2 and call[2] is not None:
            block["id"] = call[2]
        content.append(block)
    return {"role": "assistant", "content": content}


def estimate_tokens(chars: int) -> int:
    """The offline token estimate used for usage and ``context_window``: characters // 4."""
    return chars // _CHARS_PER_TOKEN


class ScriptedProvider:
    """A Provider that replays ``script``; see the module docstring for the step kinds."""

    def __init__(
        self,
        script: Iterable[Step],
        name: str = "fake",
        model: str = "scripted",
        context_window: int | None = None,
    ) -> None:
        self.name = name
        self.model = model
        self.context_window = context_window
        self.calls: list[dict[str, Any]] = []
        self._steps = iter(script)
        self._served = 0
        self._next_id = 0

    def complete(
        self,
        *,
        system: str,
        messages: list[Message],
        tools: list[dict[str, Any]],
        max_tokens: int,
    ) -> ModelReply:
        call = {
            "system": system,
            "messages": copy.deepcopy(messages),
            "tools": copy.deepcopy(tools),
            "max_tokens": max_tokens,
        }
        self.calls.append(call)
        input_tokens = estimate_tokens(
            len(json.dumps(messages, default=str, ensure_ascii=False))
            + len(system)
            + len(json.dumps(tools, default=str, ensure_ascii=False))
        )
        if self.context_window is not None and input_tokens > self.context_window:
            raise FakeContextOverflow(input_tokens, self.context_window)
        try:
            step: Any = next(self._steps)
        except StopIteration:
            raise ScriptExhausted(
                f"{self.name}: script exhausted after {self._served} step(s); "
                f"call {len(self.calls)} has no step"
            ) from None
        self._served += 1
        while callable(step) and not _is_exception_class(step):
            step = step(call["messages"], call["system"], call["tools"])
        reply = self._reply(step)
        if reply.usage == Usage():
            output_chars = len(json.dumps(reply.message.get("content"), ensure_ascii=False))
            usage = Usage(input_tokens=input_tokens, output_tokens=estimate_tokens(output_chars))
            reply = dataclasses.replace(reply, usage=usage)
        return reply

    def _reply(self, step: Any) -> ModelReply:
        if isinstance(step, BaseException) or _is_exception_class(step):
            raise step
        if isinstance(step, ModelReply):
            return dataclasses.replace(step, message=self._with_ids(step.message))
        if isinstance(step, str):
            step = text_reply(step)
        if isinstance(step, dict) and step.get("role") == "assistant":
            message = self._with_ids(cast(Message, step))  # the script's own message
            has_tools = any(block_type(b) == "tool_use" for b in blocks(message))
            return ModelReply(message, stop_reason="tool_use" if has_tools else "end_turn")
        raise TypeError(
            f"{self.name}: step {self._served} is not a ModelReply, an assistant message, "
            f"a string, an exception or a callable: {step!r}"
        )

    def _with_ids(self, message: Message) -> Message:
        message = copy.deepcopy(message)
        for block in blocks(message):
            if is_tool_use(block) and not block.get("id"):
                self._next_id += 1
                block["id"] = f"toolu_fake_{self._next_id:04d}"
        return message


def _is_exception_class(step: Any) -> bool:
    return isinstance(step, type) and issubclass(step, BaseException)
