"""OpenHands' current default condenser, run for real (``openhands-sdk`` 1.x on Python 3.12+,
read in 1.58.2: ``openhands/sdk/context/condenser/llm_summarizing_condenser.py``,
``condenser/base.py``, ``agent/agent.py``, ``conversation/state.py``).

The default agent's condenser is ``default_condenser(llm)``: ``LLMSummarizingCondenser(
max_size=80, keep_first=4)``, ``max_tokens=None``, so its token limit is the *agent* LLM's
``effective_max_input_tokens`` (here ``max_input_tokens = B``, the budget). It condenses when
the view holds more than 80 events (soft: to 40 events), when the request's tokens exceed
the window (hard: to half the window), or on a ``CondensationRequest``; a condensation that
cannot be found for a hard reason becomes a hard context reset (everything after the system
prompt summarized).

The loop per model call, as ``Agent.step`` and ``ConversationState.view`` do it: each new event
is appended to the incremental ``View``; ``condenser.condense(view, agent_llm)`` either returns
the view or a ``Condensation`` event, which is appended (the next step condenses again). When
the request then sent is over the budget, a real API refuses it (``LLMContextWindowExceedError``)
and the agent emits a ``CondensationRequest`` and retries: the adapter counts those refusals
(``refusals``) and retries the same way, at most ``MAX_RETRIES`` times per call.

Native types: the session's system prompt is a ``SystemPromptEvent``; a user text a
``MessageEvent``; an assistant message with tool calls one ``ActionEvent`` per call (sharing an
``llm_response_id``; the first carries the text as ``thought`` and the thinking blocks); each
tool result an ``ObservationEvent``. Back, the messages ``events_to_messages`` builds become
Anthropic dicts (the system message is dropped: the bench adds the system prompt itself).
The agent LLM counts tokens with the bench's counter (its window is allowed below the SDK's
16,384-token minimum with ``ALLOW_SHORT_CONTEXT_WINDOWS``, the SDK's documented override);
the summary LLM is an ``LLM`` whose ``generate`` answers with the bench's summary text.
"""

from __future__ import annotations

import json
import os
from typing import Any, cast

from context_compact.messages import (
    Block,
    Message,
    block_type,
    blocks,
    is_result,
    is_text,
    is_tool_use,
    result_text,
)

from .base import PeerStrategy, Summary, merge_runs

MAX_RETRIES = 5
ERROR_HEADER = "[An error occurred during execution.]\n"


def version() -> str:
    from importlib.metadata import version as v

    return f"openhands-sdk {v('openhands-sdk')}"


def _classes(peer: PeerStrategy, summary: Summary) -> tuple[Any, Any, Any]:
    from litellm import ModelResponse
    from openhands.sdk import LLM
    from openhands.sdk.llm import LLMResponse, TextContent
    from openhands.sdk.llm import Message as OHMessage
    from openhands.sdk.llm.utils.metrics import MetricsSnapshot
    from openhands.sdk.tool.schema import Observation

    class BenchObservation(Observation):  # type: ignore[misc]
        pass

    class BenchAgentLLM(LLM):  # type: ignore[misc]
        def get_token_count(self, messages: Any, tools: Any = None, **kwargs: Any) -> int:
            # What the replay measures: the Anthropic request (user-side parts merged), and
            # the system prompt.
            system = [m for m in messages if m.role == "system"]
            sent = to_ours_parts(system, keep_system=True) + to_ours(messages)
            return sum(peer.counter.count(m) for m in sent)

    class BenchSummaryLLM(LLM):  # type: ignore[misc]
        def generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            prompt = "\n".join(c.text for m in messages for c in m.content if hasattr(c, "text"))
            reply = OHMessage(role="assistant", content=[TextContent(text=summary(prompt))])
            return LLMResponse(
                message=reply, metrics=MetricsSnapshot(), raw_response=ModelResponse()
            )

    return BenchObservation, BenchAgentLLM, BenchSummaryLLM


class Events:
    """Anthropic messages to OpenHands events (each message converted once)."""

    def __init__(self, observation: Any) -> None:
        self.observation = observation
        self.calls: dict[str, tuple[str, str]] = {}  # tool_use id -> (tool name, event id)
        self.responses = 0

    def system(self, text: str) -> Any:
        from openhands.sdk.event import SystemPromptEvent
        from openhands.sdk.llm import TextContent

        return SystemPromptEvent(system_prompt=TextContent(text=text), tools=[])

    def of(self, message: Message) -> list[Any]:
        from openhands.sdk.event import ActionEvent, MessageEvent, ObservationEvent
        from openhands.sdk.llm import Message as OHMessage
        from openhands.sdk.llm import MessageToolCall, TextContent
        from openhands.sdk.llm.message import ThinkingBlock

        role = message.get("role")
        content = message.get("content")
        texts = (
            [content]
            if isinstance(content, str)
            else [b["text"] for b in blocks(message) if is_text(b)]
        )
        if role == "assistant":
            thinking = [
                ThinkingBlock(thinking=b.get("thinking", ""), signature=b.get("signature"))
                for b in blocks(message)
                if block_type(b) == "thinking"
            ]
            uses = [b for b in blocks(message) if is_tool_use(b)]
            if not uses:
                text = [TextContent(text=t) for t in texts]
                return [
                    MessageEvent(
                        source="agent",
                        llm_message=OHMessage(
                            role="assistant", content=text, thinking_blocks=thinking
                        ),
                    )
                ]
            self.responses += 1
            out = []
            for i, use in enumerate(uses):
                event = ActionEvent(
                    thought=[TextContent(text=t) for t in texts] if i == 0 else [],
                    thinking_blocks=thinking if i == 0 else [],
                    action=None,
                    tool_name=use["name"],
                    tool_call_id=use["id"],
                    tool_call=MessageToolCall(
                        id=use["id"],
                        name=use["name"],
                        arguments=json.dumps(use.get("input") or {}),
                        origin="completion",
                    ),
                    llm_response_id=f"response-{self.responses}",
                )
                self.calls[use["id"]] = (use["name"], event.id)
                out.append(event)
            return out
        events: list[Any] = []
        for b in blocks(message):
            if not is_result(b):
                continue
            name, action_id = self.calls.get(b["tool_use_id"], ("tool", "unknown"))
            events.append(
                ObservationEvent(
                    observation=self.observation.from_text(
                        result_text(b), is_error=bool(b.get("is_error"))
                    ),
                    tool_name=name,
                    tool_call_id=b["tool_use_id"],
                    action_id=action_id,
                )
            )
        if texts and any(t for t in texts):
            text = [TextContent(text=t) for t in texts]
            events.append(
                MessageEvent(source="user", llm_message=OHMessage(role="user", content=text))
            )
        return events


def _text(message: Any) -> list[str]:
    return [c.text for c in message.content if hasattr(c, "text")]


def to_ours_parts(messages: Any, keep_system: bool = False) -> list[Message]:
    """OpenHands ``Message`` objects as Anthropic-style parts (one per message)."""
    out: list[Message] = []
    for m in messages:
        if m.role == "system":
            if keep_system:
                out.append({"role": "user", "content": "\n".join(_text(m))})
            continue
        if m.role == "tool":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": m.tool_call_id,
                "content": "\n".join(_text(m)),
            }
            # An error observation is sent after the SDK's header (``Observation.
            # ERROR_MESSAGE_HEADER``); the Messages API says it with ``is_error``.
            header = ERROR_HEADER + "\n"
            if block["content"].startswith(header):
                block["content"] = block["content"][len(header) :]
                block["is_error"] = True
            out.append({"role": "user", "content": [cast(Block, block)]})
            continue
        if m.role == "assistant":
            content: list[Any] = [
                {"type": "thinking", "thinking": t.thinking, "signature": t.signature}
                for t in m.thinking_blocks
                if getattr(t, "type", "") == "thinking"
            ]
            content += [{"type": "text", "text": t} for t in _text(m)]
            content += [
                {
                    "type": "tool_use",
                    "id": c.id,
                    "name": c.name,
                    "input": json.loads(c.arguments or "{}"),
                }
                for c in m.tool_calls or []
            ]
            out.append({"role": "assistant", "content": content})
            continue
        texts = _text(m)
        out.append(
            {"role": "user", "content": texts[0]}
            if len(texts) == 1
            else {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}
        )
    return out


def to_ours(messages: Any) -> list[Message]:
    return merge_runs(to_ours_parts(messages))


class OpenHandsCondenser(PeerStrategy):
    name = "openhands-condenser"

    def __init__(self, summarizer: Any, budget: int, system: str = "") -> None:
        # The SDK refuses windows under 16,384 tokens unless told (its documented override);
        # the bench's 12,500 is below that. litellm, which it imports, would fetch its model
        # price map from the network at import unless told to use the copy it ships.
        os.environ.setdefault("ALLOW_SHORT_CONTEXT_WINDOWS", "true")
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        from openhands.sdk.context.condenser.llm_summarizing_condenser import default_condenser
        from openhands.sdk.context.view import View

        super().__init__()
        self.version = version()
        observation, agent_llm, summary_llm = _classes(self, Summary(summarizer))
        self.budget = budget
        self.agent_llm = agent_llm(model="bench/agent", max_input_tokens=budget, usage_id="agent")
        self.condenser = default_condenser(summary_llm(model="bench/summary", usage_id="condenser"))
        self.events = Events(observation)
        self.view = View()
        self.view.append_event(self.events.system(system))
        self.system = system
        self.refusals = 0

    def prepare(self, messages: list[Message], active_request: str) -> list[Message]:
        for message in self.new_messages(messages):
            for event in self.events.of(message):
                self.view.append_event(event)
        sent: list[Any] = self.timed(self._step)
        return self.returned(to_ours(sent))

    def _step(self) -> list[Any]:
        from openhands.sdk.event import CondensationRequest, LLMConvertibleEvent
        from openhands.sdk.event.condenser import Condensation

        retries = 0
        while True:
            result = self.condenser.condense(self.view, agent_llm=self.agent_llm)
            if isinstance(result, Condensation):
                self.view.append_event(result)
                continue
            sent = LLMConvertibleEvent.events_to_messages(result.events)
            if retries >= MAX_RETRIES or self.agent_llm.get_token_count(sent) <= self.budget:
                return [m for m in sent if m.role != "system"]
            # The API refuses the request as too long; the agent asks for a condensation.
            self.refusals += 1
            retries += 1
            self.view.append_event(CondensationRequest())
