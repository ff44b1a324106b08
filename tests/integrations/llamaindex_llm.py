"""A LlamaIndex ``FunctionCallingLLM`` that needs only ``llama-index-core``: Chat Completions
with tools through the real ``openai`` SDK, pointed at the stub (``base_url``).

The LLM the LlamaIndex tests drive ``FunctionAgent`` with: ``llama-index-llms-openai`` pins
``openai<3`` and the Agents SDK in [dev] needs ``openai>=3``, so the tests bring their own.

What ``FunctionAgent`` asks of it (``llama_index.core.llms.function_calling``):

- ``_prepare_chat_with_tools`` turns the tools into OpenAI function schemas and returns the
  keyword arguments of ``chat``/``achat``/``astream_chat`` (``messages``, ``tools``, and
  ``tool_choice`` when the agent sets one); ``achat_with_tools`` and
  ``astream_chat_with_tools`` (the base class's) call those with them.
- Messages go out in the OpenAI shapes: system and user text; an assistant's text and a
  ``tool_calls`` entry per ``ToolCallBlock``; a ``tool`` message's text with the
  ``tool_call_id`` the agent keeps in ``additional_kwargs``.
- The answer comes back as one assistant ``ChatMessage``: a ``TextBlock`` of the text and a
  ``ToolCallBlock`` per tool call (arguments parsed from JSON), ``raw`` the SDK's object (its
  ``usage`` is what the compactor calibrates on). Streaming asks for the usage chunk, yields the
  message so far at every chunk (a tool call appears once its arguments parse whole) and raises
  at the end if one never does.
- ``get_tool_calls_from_response`` reads the ``ToolCallBlock``s back as ``ToolSelection``s.

An API error (a refusal) is the SDK's own exception, raised from the call before any chunk.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Generator, Sequence
from typing import Any

import openai
from llama_index.core.base.llms.generic_utils import (
    achat_to_completion_decorator,
    astream_chat_to_completion_decorator,
    chat_to_completion_decorator,
    stream_chat_to_completion_decorator,
)
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    LLMMetadata,
    MessageRole,
    TextBlock,
    ToolCallBlock,
)
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.llms.llm import ToolSelection


def _to_openai(message: ChatMessage) -> dict[str, Any]:
    role = message.role.value
    text = message.content or ""
    if role == "tool":
        call_id = str(message.additional_kwargs["tool_call_id"])
        return {"role": "tool", "tool_call_id": call_id, "content": text}
    if role != "assistant":
        return {"role": role, "content": text}
    calls = [
        {
            "id": b.tool_call_id,
            "type": "function",
            "function": {"name": b.tool_name, "arguments": json.dumps(b.tool_kwargs)},
        }
        for b in message.blocks
        if isinstance(b, ToolCallBlock)
    ]
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        out["tool_calls"] = calls
    return out


def _message(text: str, calls: Sequence[tuple[str, str, dict[str, Any]]]) -> ChatMessage:
    blocks: list[Any] = [TextBlock(text=text)] if text else []
    blocks += [ToolCallBlock(tool_call_id=i, tool_name=n, tool_kwargs=k) for i, n, k in calls]
    return ChatMessage(role=MessageRole.ASSISTANT, blocks=blocks)


def _parsed(arguments: str) -> dict[str, Any] | None:
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _response(completion: Any) -> ChatResponse:
    choice = completion.choices[0].message
    calls = []
    for call in choice.tool_calls or []:
        kwargs = _parsed(call.function.arguments)
        if kwargs is None:
            raise ValueError(f"tool call {call.id}: arguments are not a JSON object")
        calls.append((call.id, call.function.name, kwargs))
    return ChatResponse(message=_message(choice.content or "", calls), raw=completion)


class _Stream:
    """The message so far of a streamed completion, one chunk at a time."""

    def __init__(self) -> None:
        self.text = ""
        self.calls: dict[int, list[str]] = {}

    def add(self, chunk: Any) -> ChatResponse:
        delta_text = ""
        for choice in chunk.choices:
            delta_text += choice.delta.content or ""
            for call in choice.delta.tool_calls or []:
                slot = self.calls.setdefault(call.index, ["", "", ""])
                slot[0] = call.id or slot[0]
                if call.function is not None:
                    slot[1] = call.function.name or slot[1]
                    slot[2] += call.function.arguments or ""
        self.text += delta_text
        return ChatResponse(message=self.message(), delta=delta_text, raw=chunk)

    def message(self) -> ChatMessage:
        whole = [(i, n, _parsed(a)) for i, n, a in self.calls.values()]
        return _message(self.text, [(i, n, k) for i, n, k in whole if k is not None])

    def finish(self) -> None:
        for call_id, _name, arguments in self.calls.values():
            if _parsed(arguments) is None:
                raise ValueError(f"tool call {call_id}: arguments are not a JSON object")


class StubChatLLM(FunctionCallingLLM):
    """Chat Completions with tools at ``base_url`` (see the module docstring)."""

    base_url: str
    model: str = "gpt-4o"
    api_key: str = "sk-stub"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            model_name=self.model,
            context_window=128_000,
            is_chat_model=True,
            is_function_calling_model=True,
        )

    def _request(self, messages: Sequence[ChatMessage], **kwargs: Any) -> dict[str, Any]:
        return {"model": self.model, "messages": [_to_openai(m) for m in messages], **kwargs}

    def _client(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.base_url, api_key=self.api_key, max_retries=0)

    def _aclient(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(base_url=self.base_url, api_key=self.api_key, max_retries=0)

    def _prepare_chat_with_tools(
        self,
        tools: Sequence[Any],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        messages = list(chat_history or [])
        if isinstance(user_msg, str):
            messages.append(ChatMessage(role=MessageRole.USER, content=user_msg))
        elif user_msg is not None:
            messages.append(user_msg)
        prepared: dict[str, Any] = {"messages": messages}
        if tools:
            prepared["tools"] = [t.metadata.to_openai_tool() for t in tools]
        if tool_required:
            prepared["tool_choice"] = "required"
        return {**prepared, **kwargs}

    def get_tool_calls_from_response(
        self, response: ChatResponse, error_on_no_tool_call: bool = True, **kwargs: Any
    ) -> list[ToolSelection]:
        calls = [
            ToolSelection(
                tool_id=b.tool_call_id or "", tool_name=b.tool_name, tool_kwargs=b.tool_kwargs
            )
            for b in response.message.blocks
            if isinstance(b, ToolCallBlock)
        ]
        if not calls and error_on_no_tool_call:
            raise ValueError(f"expected a tool call, the model answered: {response.message}")
        return calls

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        with self._client() as client:
            return _response(client.chat.completions.create(**self._request(messages, **kwargs)))

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        async with self._aclient() as client:
            request = self._request(messages, **kwargs)
            return _response(await client.chat.completions.create(**request))

    def stream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> Generator[ChatResponse, None, None]:
        client = self._client()
        request = self._request(messages, stream=True, **kwargs)
        request["stream_options"] = {"include_usage": True}
        try:
            chunks = client.chat.completions.create(**request)
        except BaseException:
            client.close()
            raise

        def gen() -> Generator[ChatResponse, None, None]:
            stream = _Stream()
            try:
                for chunk in chunks:
                    yield stream.add(chunk)
                stream.finish()
            finally:
                client.close()

        return gen()

    async def astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> AsyncGenerator[ChatResponse, None]:
        client = self._aclient()
        request = self._request(messages, stream=True, **kwargs)
        request["stream_options"] = {"include_usage": True}
        try:
            chunks = await client.chat.completions.create(**request)
        except BaseException:
            await client.close()
            raise

        async def gen() -> AsyncGenerator[ChatResponse, None]:
            stream = _Stream()
            try:
                async for chunk in chunks:
                    yield stream.add(chunk)
                stream.finish()
            finally:
                await client.close()

        return gen()

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return chat_to_completion_decorator(self.chat)(prompt, **kwargs)

    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        return await achat_to_completion_decorator(self.achat)(prompt, **kwargs)

    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> Generator[CompletionResponse, None, None]:
        return stream_chat_to_completion_decorator(self.stream_chat)(prompt, **kwargs)

    async def astream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> AsyncGenerator[CompletionResponse, None]:
        return await astream_chat_to_completion_decorator(self.astream_chat)(prompt, **kwargs)
