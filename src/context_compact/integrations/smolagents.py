"""A smolagents step callback that keeps ``agent.memory.steps`` inside the context window.

    from smolagents import ActionStep, ToolCallingAgent
    from context_compact.integrations.smolagents import compaction_callback

    agent = ToolCallingAgent(tools=[...], model=model,
                             step_callbacks={ActionStep: [compaction_callback(compactor)]})

smolagents builds every model request from ``agent.memory`` (``write_memory_to_messages``) and
runs the step callbacks after each step, before the step joins the memory. The callback
(``(step, agent)``, as smolagents calls it) converts the memory's steps plus that step into
canonical messages, lets the compactor decide the view, and writes the view back as the
memory's steps, so the next request is the view. The unit is the whole step: a step's tool
calls (however many, run in parallel) are one ``tool_use`` block with the id of its first call,
and its observation (with its error, if any) that call's one result, so a call never leaves
without its observation. Back: a step the view kept is the same object; a step whose
observation the view replaced (a preview, a cleared marker naming the file that holds it) is
a copy with the new ``observations`` (the step just run is changed in place, as smolagents
appends that object next); a summary is a ``SummaryStep`` (one user message). Nothing is
lost: every step the callback saw is in the compactor's session (``recall``), every elided
result in a file the view names.

The agent's system prompt and its tools' descriptions count against the window
(``set_request``); each step's ``token_usage`` (the request that produced it) calibrates the
budget. Each run with a fresh memory (``agent.run(task)``, whose ``reset=True`` clears it) is
a conversation of its own, a session of its own (``conversations.compactor_for``; a
``Conversations`` is asked by ``<agent name>-<run id>``); ``run(..., reset=False)`` goes on
in the same one. smolagents ends a run when the model call itself fails
(``AgentGenerationError``), so a refusal for length cannot be retried from a callback:
``compacting_model(model, callback)`` wraps the agent's model so that such a refusal is
recovered (``Compactor.recover``) and the request sent once more from the recovered memory.
"""

from __future__ import annotations

import json
import threading
import uuid
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..errors import MissingExtra

try:
    from smolagents.memory import ActionStep, MemoryStep, PlanningStep, TaskStep
    from smolagents.models import ChatMessage, MessageRole
except ImportError as error:  # pragma: no cover - the message is the point
    raise MissingExtra(
        "context_compact.integrations.smolagents", "smolagents", "smolagents", "smolagents"
    ) from error

from ..compactor import Compactor
from ..keys import content_key
from ..messages import Block, Message, blocks, is_tool_use
from ..providers.thinking import recoverable
from ._bridge import results_in, text_of
from .conversations import Conversations, compactor_for

PROCEED = "Now proceed and carry out this plan."


@dataclass
class SummaryStep(MemoryStep):  # type: ignore[misc, unused-ignore]
    """The compactor's summary of the steps it replaced, sent as one user message."""

    summary: str

    def to_messages(self, summary_mode: bool = False) -> list[Any]:
        return [
            ChatMessage(role=MessageRole.USER, content=[{"type": "text", "text": self.summary}])
        ]


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _observation(step: Any) -> str:
    parts = [step.observations or ""]
    if step.error is not None:
        parts.append(f"Error:\n{step.error}")
    return "\n".join(p for p in parts if p)


def to_messages(step: Any) -> list[Message]:
    """One memory step as canonical messages (see the module docstring)."""
    if isinstance(step, SummaryStep):
        return [{"role": "user", "content": step.summary}]
    if isinstance(step, TaskStep):
        return [{"role": "user", "content": f"New task:\n{step.task}"}]
    if isinstance(step, PlanningStep):
        return [{"role": "assistant", "content": step.plan}, {"role": "user", "content": PROCEED}]
    if not isinstance(step, ActionStep):
        return []
    said = _text(step.model_output).strip()
    head: list[Block] = [{"type": "text", "text": said}] if said else []
    if not step.tool_calls:
        out: list[Message] = [{"role": "assistant", "content": said or "(no output)"}]
        if step.error is not None:
            out.append({"role": "user", "content": _observation(step)})
        return out
    first = step.tool_calls[0]
    use: Block = {
        "type": "tool_use",
        "id": first.id,
        "name": first.name if len(step.tool_calls) == 1 else "parallel_tool_calls",
        "input": {
            "calls": [json.loads(json.dumps(tc.dict(), default=str)) for tc in step.tool_calls]
        },
    }
    result: Block = {"type": "tool_result", "tool_use_id": first.id, "content": _observation(step)}
    return [{"role": "assistant", "content": [*head, use]}, {"role": "user", "content": [result]}]


def restore(view: list[Message], steps: list[Any], current: Any) -> list[Any]:
    """The view as memory steps: the same objects where kept (see the module docstring)."""
    by_key: dict[str, deque[Any]] = {}
    by_call: dict[str, Any] = {}
    for step in steps:
        for message in to_messages(step):
            by_key.setdefault(content_key(message), deque()).append(step)
            for block in results_in(message):
                by_call[block["tool_use_id"]] = step
    out: list[Any] = []
    for message in view:
        queue = by_key.get(content_key(message))
        step = queue.popleft() if queue else None
        if step is None:
            step = _changed(message, by_call, current)
        if step is None:
            step = SummaryStep(summary=text_of(message["content"]))
        if not out or out[-1] is not step:
            if out and isinstance(step, ActionStep) and _same_step(out[-1], step):
                out[-1] = step  # the copy with the new observation replaces its step
            else:
                out.append(step)
    return out


def _same_step(a: Any, b: Any) -> bool:
    return isinstance(a, ActionStep) and a.step_number == b.step_number and a.timing is b.timing


def _changed(message: Message, by_call: dict[str, Any], current: Any) -> Any:
    """The step of a message the compactor changed: its result replaced, its call's input
    cleared. None for a message the compactor wrote (a summary)."""
    for block in results_in(message):
        step = by_call.get(block["tool_use_id"])
        if step is None:
            continue
        new = text_of(block.get("content", ""))
        if step is current:
            step.observations, step.error = new, None
            return step
        return replace(step, observations=new, error=None)
    for call in blocks(message):
        if is_tool_use(call) and call.get("id") in by_call:
            return by_call[call["id"]]
    return None


class CompactionCallback:
    """The step callback (``compaction_callback``): one per agent or shared by several."""

    def __init__(self, compactor: Compactor | Conversations) -> None:
        self.compactor = compactor
        self._runs: weakref.WeakKeyDictionary[Any, tuple[Any, str]] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def compactor_for(self, agent: Any) -> Compactor:
        """The compactor of ``agent``'s current run (its memory since the last reset)."""
        memory = agent.memory
        first = memory.steps[0] if memory.steps else None
        with self._lock:
            known = self._runs.get(memory)
            if known is None or known[0] is not first:
                name = getattr(agent, "name", None) or "agent"
                known = self._runs[memory] = (first, f"{name}-{uuid.uuid4().hex[:12]}")
        if isinstance(self.compactor, Conversations):
            return self.compactor.get(known[1])
        return compactor_for(self.compactor, known[1])

    def _prepare(self, agent: Any, step: Any, error: BaseException | None = None) -> None:
        compactor = self.compactor_for(agent)
        usage = getattr(step, "token_usage", None)
        if usage is not None and error is None:
            compactor.observe(usage.input_tokens)
        compactor.set_request(agent.memory.system_prompt.system_prompt, _tools(agent))
        steps = [*agent.memory.steps, step]
        messages = [m for s in steps for m in to_messages(s)]
        tasks = [s.task for s in steps if isinstance(s, TaskStep)]
        request = tasks[-1] if tasks else ""
        if error is None:
            view = compactor.prepare(messages, request)
        else:
            view = compactor.recover(error, messages, request)
        kept = restore(view, steps, step)
        agent.memory.steps[:] = [s for s in kept if s is not step]

    def __call__(self, step: Any, agent: Any) -> None:
        if isinstance(step, ActionStep):
            self._prepare(agent, step)

    def recover(self, agent: Any, error: BaseException) -> bool:
        """After the model refused the request built from ``agent``'s memory: the memory
        rewritten to the recovered view; False when the error is not one to recover."""
        cause = recoverable(error)
        if cause is None or not agent.memory.steps:
            return False
        last = agent.memory.steps.pop()
        self._prepare(agent, last, cause)
        agent.memory.steps.append(last)
        return True


def _tools(agent: Any) -> list[Any]:
    tools = getattr(agent, "tools", None) or {}
    return [
        {
            "name": name,
            "description": getattr(t, "description", ""),
            "inputs": getattr(t, "inputs", {}),
        }
        for name, t in tools.items()
    ]


def compaction_callback(compactor: Compactor | Conversations) -> CompactionCallback:
    """The callback for ``step_callbacks={ActionStep: [compaction_callback(compactor)]}``."""
    return CompactionCallback(compactor)


def compacting_model(model: Any, callback: CompactionCallback, agent: Any = None) -> Any:
    """``model`` whose ``generate`` recovers a refusal for length (or of a thinking block):
    the agent's memory rewritten by ``callback.recover`` and the request rebuilt and sent
    once more. ``agent`` may be set later (``wrapped.agent = agent``)."""
    return _RecoveringModel(model, callback, agent)


class _RecoveringModel:
    def __init__(self, model: Any, callback: CompactionCallback, agent: Any) -> None:
        self._model = model
        self._callback = callback
        self.agent = agent

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.generate(*args, **kwargs)

    def generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return self._model.generate(messages, *args, **kwargs)
        except Exception as error:
            agent = self.agent
            if agent is None or not self._callback.recover(agent, error):
                raise
            return self._model.generate(_rebuilt(agent, messages), *args, **kwargs)


def _rebuilt(agent: Any, messages: Any) -> Any:
    """The agent's request rebuilt from its (recovered) memory, as smolagents builds it."""
    built: Callable[[], Any] = agent.write_memory_to_messages
    return built()


__all__ = ["CompactionCallback", "SummaryStep", "compacting_model", "compaction_callback"]
