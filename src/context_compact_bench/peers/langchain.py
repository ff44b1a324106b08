"""LangChain's v1 agent middleware, run for real: ``SummarizationMiddleware`` and
``ContextEditingMiddleware`` (``langchain`` 1.x, read in 1.5.2 with ``langchain-core`` 1.8.3:
``langchain/agents/middleware/summarization.py``, ``context_editing.py``).

Native types: the Anthropic history becomes ``langchain_core`` messages as
``langchain-anthropic`` holds them: a user text is a ``HumanMessage``; an assistant message is
an ``AIMessage`` whose ``content`` is its Anthropic blocks and whose ``tool_calls`` are its
``tool_use`` blocks; each ``tool_result`` block is a ``ToolMessage`` (a user message's other
blocks follow as a ``HumanMessage``). Back, consecutive user-side messages are merged into
one user message (the Messages API alternates roles).

Defaults, scaled to the budget ``B``:

* ``SummarizationMiddleware(model, trigger=("fraction", 0.8), keep=("messages", 20))`` with the
  model's profile ``max_input_tokens = B``. ``keep`` is the library's default (the last 20
  messages, moved back to keep an AI message with its tool messages); ``trigger`` has no
  default (``None`` never summarizes), so the docstring's own example, 80% of the model's
  input window, is used. ``trim_tokens_to_summarize`` keeps its default (4,000). The hook is
  ``before_model``; its update is applied with langgraph's ``add_messages`` reducer, as the
  agent graph does, so the summary replaces the history for good. It counts the state's
  messages, which exclude the system prompt.
* ``ContextEditingMiddleware()`` with its default ``ClearToolUsesEdit`` (``keep=3``, placeholder
  ``[cleared]``) and ``trigger = min(100,000, B)``. The hook is ``wrap_model_call``: it edits a
  deep copy of the request every call; the state keeps every result.

Both count tokens with the bench's counter. The fake model is a ``BaseChatModel`` that answers
every prompt with the bench's summary text.
"""

from __future__ import annotations

from typing import Any, cast

from context_compact.messages import Block, Message, blocks, is_result, is_tool_use

from .base import PeerStrategy, Summary, merge_runs

FRACTION = 0.8
KEEP_MESSAGES = 20
CLEAR_TRIGGER = 100_000


def version() -> str:
    from importlib.metadata import version as v

    return f"langchain {v('langchain')}, langchain-core {v('langchain-core')}"


def summary_model(summary: Summary, budget: int) -> Any:
    """A LangChain chat model whose every reply is the bench's summary of the prompt."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class BenchSummaryChatModel(BaseChatModel):  # type: ignore[misc, unused-ignore]
        @property
        def _llm_type(self) -> str:
            return "bench-summary"

        def _generate(
            self,
            messages: list[Any],
            stop: list[str] | None = None,
            run_manager: Any = None,
            **kwargs: Any,
        ) -> ChatResult:
            prompt = "\n".join(str(m.content) for m in messages)
            reply = AIMessage(content=summary(prompt))
            return ChatResult(generations=[ChatGeneration(message=reply)])

    return BenchSummaryChatModel(profile={"max_input_tokens": budget})


class Converter:
    """Anthropic dicts to LangChain messages and back, each message converted once."""

    def __init__(self) -> None:
        self._ids = 0
        self._back: dict[tuple[str, bool], Message] = {}

    def _id(self) -> str:
        self._ids += 1
        return f"m{self._ids}"

    def to_native(self, message: Message) -> list[Any]:
        from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

        content = message.get("content")
        if message.get("role") == "assistant":
            calls = [
                {"name": b["name"], "args": b.get("input") or {}, "id": b["id"]}
                for b in blocks(message)
                if is_tool_use(b)
            ]
            body = content if isinstance(content, str) else [dict(b) for b in content or []]
            return [AIMessage(content=cast(Any, body), tool_calls=calls, id=self._id())]
        if isinstance(content, str):
            return [HumanMessage(content=content, id=self._id())]
        out: list[Any] = []
        rest: list[Any] = []
        for b in blocks(message):
            if is_result(b):
                out.append(
                    ToolMessage(
                        content=cast("str | list[str | dict[Any, Any]]", b.get("content", "")),
                        tool_call_id=b["tool_use_id"],
                        status="error" if b.get("is_error") else "success",
                        id=self._id(),
                    )
                )
            else:
                rest.append(dict(b))
        if rest or not out:
            out.append(HumanMessage(content=rest, id=self._id()))
        return out

    def part(self, native: Any) -> Message:
        """One LangChain message as (part of) an Anthropic message, cached by its id.

        A message keeps its id when ``ContextEditingMiddleware`` deep-copies the request or
        clears a result (that edit marks it in ``response_metadata``), so the key is both."""
        if native.id is None:
            return self._part(native)
        cleared = bool(native.response_metadata.get("context_editing"))
        key = (native.id, cleared)
        hit = self._back.get(key)
        if hit is None:
            hit = self._back[key] = self._part(native)
        return hit

    @staticmethod
    def _part(native: Any) -> Message:
        kind = native.type
        if kind == "ai":
            body = native.content
            if isinstance(body, list) and not any(is_tool_use(b) for b in body):
                body = [*body, *(_use(c) for c in native.tool_calls)]
            elif isinstance(body, str) and native.tool_calls:
                head = [{"type": "text", "text": body}] if body else []
                body = head + [_use(c) for c in native.tool_calls]
            return {"role": "assistant", "content": body}
        if kind == "tool":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": native.tool_call_id,
                "content": native.content,
            }
            if native.status == "error":
                block["is_error"] = True
            return {"role": "user", "content": [cast(Block, block)]}
        return {"role": "user", "content": native.content}

    def to_ours(self, natives: list[Any]) -> list[Message]:
        return merge_runs(self.part(native) for native in natives)


def _use(call: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call["id"], "name": call["name"], "input": call["args"]}


def counter_for(converter: Converter, peer: PeerStrategy) -> Any:
    """The bench's token counter over LangChain messages."""

    def count(messages: Any) -> int:
        return sum(peer.counter.message(converter.part(m)) for m in messages)

    return count


class LangChainSummarization(PeerStrategy):
    name = "langchain-summarization"

    def __init__(self, summarizer: Any, budget: int) -> None:
        from langchain.agents.middleware import SummarizationMiddleware

        super().__init__()
        self.version = version()
        self.convert = Converter()
        self.state: list[Any] = []
        self.middleware = SummarizationMiddleware(
            summary_model(Summary(summarizer), budget),
            trigger=("fraction", FRACTION),
            keep=("messages", KEEP_MESSAGES),
            token_counter=counter_for(self.convert, self),
        )

    def prepare(self, messages: list[Message], active_request: str) -> list[Message]:
        from langgraph.graph.message import add_messages

        for message in self.new_messages(messages):
            self.state.extend(self.convert.to_native(message))

        def hook() -> None:
            update = self.middleware.before_model({"messages": self.state}, None)  # type: ignore[arg-type, unused-ignore]
            if update is not None:
                self.state = cast(list[Any], add_messages(self.state, update["messages"]))

        self.timed(hook)
        return self.returned(self.convert.to_ours(self.state))


class LangChainContextEditing(PeerStrategy):
    name = "langchain-context-editing"

    def __init__(self, summarizer: Any, budget: int) -> None:
        from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware

        super().__init__()
        self.version = version()
        self.convert = Converter()
        self.state: list[Any] = []
        self.model = summary_model(Summary(summarizer), budget)
        self.middleware = ContextEditingMiddleware(
            edits=[ClearToolUsesEdit(trigger=min(CLEAR_TRIGGER, budget))],
            token_counter=counter_for(self.convert, self),
        )

    def prepare(self, messages: list[Message], active_request: str) -> list[Message]:
        from langchain.agents.middleware.types import ModelRequest

        for message in self.new_messages(messages):
            self.state.extend(self.convert.to_native(message))
        sent: list[Any] = []

        def handler(request: Any) -> Any:
            sent.extend(request.messages)
            return None

        request = ModelRequest(model=self.model, messages=list(self.state))
        self.timed(lambda: self.middleware.wrap_model_call(request, handler))
        return self.returned(self.convert.to_ours(sent))
