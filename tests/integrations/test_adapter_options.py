"""The adapters take the compactor's settings by the peers' names (LangChain's
``SummarizationMiddleware``: ``model``, ``trigger``, ``keep``, ``summary_prompt``,
``token_counter``) and the framework's own model as the summarizer."""

from __future__ import annotations

from typing import Any

import pytest

from context_compact import MemoryStore
from context_compact.integrations.options import policy_fields

REQUEST = "read the logs"


def history(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "content": REQUEST}]
    for k in range(turns):
        use = {"type": "tool_use", "id": f"t{k}", "name": "read_log", "input": {"part": k}}
        out += [
            {"role": "assistant", "content": [use]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{k}", "content": "ok " * 50}],
            },
        ]
    return out


def test_trigger_and_keep_read_as_langchains_summarization_middleware() -> None:
    fields = policy_fields(
        trigger=[("messages", 50), ("tokens", 80_000)],
        keep=("fraction", 0.3),
        context_limit=100_000,
    )
    assert fields == {
        "context_limit": 100_000,
        "trigger_messages": 50,
        "high_water": 0.8,
        "low_water": 0.3,
    }
    assert policy_fields(trigger=("fraction", 0.7), keep=("tokens", 20_000), context_limit=100_000)[
        "low_water"
    ] == pytest.approx(0.2)


@pytest.mark.parametrize(("trigger", "keep"), [(("turns", 3), None), (None, ("messages", 20))])
def test_a_trigger_or_keep_we_cannot_honor_is_refused_with_the_field_to_use(
    trigger: Any, keep: Any
) -> None:
    with pytest.raises(ValueError):
        policy_fields(trigger=trigger, keep=keep, context_limit=100_000)


def test_the_langchain_middleware_builds_its_compactor_from_keywords() -> None:
    pytest.importorskip("langchain")
    from context_compact.integrations.langchain import CompactionMiddleware

    middleware = CompactionMiddleware(
        context_limit=50_000,
        trigger=("messages", 40),
        keep=("fraction", 0.3),
        exclude_tools=["memory"],
        clear_tool_inputs=True,
        store=MemoryStore(),
    )
    policy = middleware.compactor.policy
    assert (policy.context_limit, policy.trigger_messages, policy.low_water) == (50_000, 40, 0.3)
    assert policy.exclude_tools == ("memory",) and policy.clear_tool_inputs is True
    with pytest.raises(TypeError):
        CompactionMiddleware(middleware.compactor, exclude_tools=["memory"])


def test_a_langchain_chat_model_is_the_summarizer_with_our_prompt_or_the_policys() -> None:
    pytest.importorskip("langchain")
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from context_compact.integrations.langchain import CompactionMiddleware

    seen: list[Any] = []

    class Recording(GenericFakeChatModel):
        def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            seen.append(messages)
            return super()._generate(messages, *args, **kwargs)

    model = Recording(messages=iter([AIMessage(content="the haiku summary")] * 5))
    middleware = CompactionMiddleware(
        context_limit=200_000,
        summary_model=model,
        summary_prompt="Summarize as a haiku.",
        store=MemoryStore(),
    )
    view = middleware.compactor.compact_history(history(8), REQUEST)
    assert seen and seen[0][0].content == "Summarize as a haiku."
    assert "the haiku summary" in str(view)


def test_a_pydantic_ai_model_is_the_summarizer() -> None:
    pytest.importorskip("pydantic_ai.capabilities")
    from pydantic_ai.messages import ModelResponse, SystemPromptPart, TextPart
    from pydantic_ai.models.function import FunctionModel

    from context_compact.integrations.pydantic_ai import CompactionCapability

    systems: list[str] = []

    def answer(messages: Any, info: Any) -> ModelResponse:
        systems.extend(p.content for p in messages[0].parts if isinstance(p, SystemPromptPart))
        return ModelResponse(parts=[TextPart("the model's summary")])

    capability = CompactionCapability(
        context_limit=200_000, summary_model=FunctionModel(answer), store=MemoryStore()
    )
    view = capability.compactor.compact_history(history(8), REQUEST)
    assert systems and "summar" in systems[0].lower()
    assert "the model's summary" in str(view)
