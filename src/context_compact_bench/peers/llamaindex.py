"""LlamaIndex's ``ChatSummaryMemoryBuffer``, run for real (``llama-index-core`` 0.14, read in
0.14.25: ``llama_index/core/memory/chat_summary_memory_buffer.py``).

Native types: ``ChatMessage`` with 0.14's content blocks. A user text is a ``USER`` message; an
assistant message is an ``ASSISTANT`` message of ``TextBlock``, ``ThinkingBlock`` (its signature
kept in ``additional_information``) and ``ToolCallBlock``; each ``tool_result`` is a ``TOOL``
message with ``tool_call_id`` in ``additional_kwargs`` (a user message's other blocks follow
as a ``USER`` message). The buffer's summary is a ``SYSTEM`` message; the bench sends it as a
user message. Back, consecutive user-side messages are merged into one user message.

Defaults, scaled to the budget ``B``: ``ChatSummaryMemoryBuffer.from_defaults(llm=...)`` with a
``CustomLLM`` whose ``context_window`` is ``B``, so ``token_limit = 0.75 B`` (the library's
``DEFAULT_TOKEN_LIMIT_RATIO``); ``count_initial_tokens=False`` (the default: the system prompt
is not counted). The agent ``put``s each new message and calls ``get()`` before each model call;
``get()`` keeps the newest messages whose text fits ``token_limit``, moves kept ``ASSISTANT`` and
``TOOL`` messages at the start of that run to the summarized part (the kept history never
opens with them), and replaces the rest, with the previous summary, by one summary. Its count
is of ``str(message.content)`` only, so tool-call arguments and thinking are not counted.

``tokenizer_fn`` is the bench's counter (a sequence as long as ``text_tokens(text)``).
The fake model is a ``CustomLLM`` answering every prompt with the bench's summary text.
"""

from __future__ import annotations

from typing import Any, cast

from context_compact.messages import (
    Block,
    Message,
    block_type,
    blocks,
    is_result,
    is_text,
    is_tool_use,
)
from context_compact.messages import ThinkingBlock as Thought
from context_compact.sizing import text_tokens

from .base import PeerStrategy, Summary, merge_runs


def version() -> str:
    from importlib.metadata import version as v

    return f"llama-index-core {v('llama-index-core')}"


def summary_llm(summary: Summary, budget: int) -> Any:
    """A LlamaIndex ``CustomLLM`` whose every completion is the bench's summary of the prompt."""
    from llama_index.core.base.llms.types import (
        CompletionResponse,
        CompletionResponseGen,
        LLMMetadata,
    )
    from llama_index.core.llms.callbacks import llm_completion_callback
    from llama_index.core.llms.custom import CustomLLM

    class BenchSummaryLLM(CustomLLM):  # type: ignore[misc, unused-ignore]
        context_window: int = budget

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(context_window=self.context_window, model_name="bench-summary")

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            return CompletionResponse(text=summary(prompt))

        @llm_completion_callback()
        def stream_complete(
            self, prompt: str, formatted: bool = False, **kwargs: Any
        ) -> CompletionResponseGen:
            text = summary(prompt)

            def gen() -> CompletionResponseGen:
                yield CompletionResponse(text=text, delta=text)

            return gen()

    return BenchSummaryLLM()


class Tokens:
    """``tokenizer_fn`` for the buffer: only its length is used."""

    def __call__(self, text: str) -> range:
        return range(text_tokens(text))


def to_native(message: Message) -> list[Any]:
    from llama_index.core.base.llms.types import (
        ChatMessage,
        MessageRole,
        TextBlock,
        ThinkingBlock,
        ToolCallBlock,
    )

    content = message.get("content")
    if message.get("role") == "assistant":
        if isinstance(content, str):
            return [ChatMessage(role=MessageRole.ASSISTANT, content=content)]
        parts: list[Any] = []
        for b in blocks(message):
            if is_text(b):
                parts.append(TextBlock(text=b["text"]))
            elif block_type(b) == "thinking":
                thinking = cast("Thought", b)  # a block whose type is "thinking" is one
                extra = {k: v for k, v in b.items() if k not in ("type", "thinking")}
                parts.append(
                    ThinkingBlock(content=thinking["thinking"], additional_information=extra)
                )
            elif is_tool_use(b):
                parts.append(
                    ToolCallBlock(
                        tool_call_id=b["id"], tool_name=b["name"], tool_kwargs=b.get("input") or {}
                    )
                )
        # A list of one text block and a plain string are one TextBlock here: the kwarg says
        # which it was, so the way back gives the same message.
        extra = {"anthropic_blocks": True}
        return [ChatMessage(role=MessageRole.ASSISTANT, blocks=parts, additional_kwargs=extra)]
    if isinstance(content, str):
        return [ChatMessage(role=MessageRole.USER, content=content)]
    out: list[Any] = []
    rest: list[Any] = []
    for b in blocks(message):
        if is_result(b):
            body = b.get("content", "")
            kwargs: dict[str, Any] = {"tool_call_id": b["tool_use_id"]}
            if b.get("is_error"):
                kwargs["is_error"] = True
            if not isinstance(body, str):  # content blocks: kept whole for the way back
                kwargs["anthropic_content"] = body
                body = "\n".join(str(x.get("text", "")) for x in body if isinstance(x, dict))
            out.append(ChatMessage(role=MessageRole.TOOL, content=body, additional_kwargs=kwargs))
        elif is_text(b):
            rest.append(TextBlock(text=b["text"]))
    if rest or not out:
        out.append(ChatMessage(role=MessageRole.USER, blocks=rest))
    return out


def part(native: Any) -> Message:
    """One ``ChatMessage`` as (part of) an Anthropic message."""
    from llama_index.core.base.llms.types import TextBlock, ThinkingBlock, ToolCallBlock

    role = str(native.role.value)
    if role == "assistant":
        content: list[Any] = []
        for b in native.blocks:
            if isinstance(b, TextBlock):
                content.append({"type": "text", "text": b.text})
            elif isinstance(b, ThinkingBlock):
                content.append(
                    {"type": "thinking", "thinking": b.content, **b.additional_information}
                )
            elif isinstance(b, ToolCallBlock):
                content.append(
                    {
                        "type": "tool_use",
                        "id": b.tool_call_id,
                        "name": b.tool_name,
                        "input": b.tool_kwargs,
                    }
                )
        single = len(native.blocks) == 1 and isinstance(native.blocks[0], TextBlock)
        if single and not native.additional_kwargs.get("anthropic_blocks"):
            return {"role": "assistant", "content": native.blocks[0].text}
        return {"role": "assistant", "content": content}
    if role == "tool":
        extra = native.additional_kwargs
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": extra["tool_call_id"],
            "content": extra.get("anthropic_content", native.content or ""),
        }
        if extra.get("is_error"):
            block["is_error"] = True
        return {"role": "user", "content": [cast(Block, block)]}
    texts = [b for b in native.blocks if isinstance(b, TextBlock)]
    if len(native.blocks) == 1 and texts:
        return {"role": "user", "content": texts[0].text}
    return {"role": "user", "content": [{"type": "text", "text": b.text} for b in texts]}


class Converter:
    """Each ``ChatMessage`` converted back once (the buffer keeps the objects it was given)."""

    def __init__(self) -> None:
        self._back: dict[int, tuple[Any, Message]] = {}

    def part(self, native: Any) -> Message:
        hit = self._back.get(id(native))
        if hit is not None and hit[0] is native:
            return hit[1]
        message = part(native)
        self._back[id(native)] = (native, message)
        return message

    def to_ours(self, natives: list[Any]) -> list[Message]:
        return merge_runs(self.part(native) for native in natives)


class LlamaIndexSummaryBuffer(PeerStrategy):
    name = "llamaindex-summary-buffer"

    def __init__(self, summarizer: Any, budget: int) -> None:
        from llama_index.core.memory import ChatSummaryMemoryBuffer

        super().__init__()
        self.version = version()
        self.convert = Converter()
        self.memory = ChatSummaryMemoryBuffer.from_defaults(
            llm=summary_llm(Summary(summarizer), budget), tokenizer_fn=cast(Any, Tokens())
        )

    def prepare(self, messages: list[Message], active_request: str) -> list[Message]:
        for message in self.new_messages(messages):
            for native in to_native(message):
                self.memory.put(native)
        history: list[Any] = self.timed(self.memory.get)
        return self.returned(self.convert.to_ours(history))
