"""``ContextOverflow``: one exception type for a refusal for length, raised by our providers
and mapped from every SDK's (and framework's) own refusal by ``context_overflow``; every
other error maps to None."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
from test_provider_errors import (
    ANTHROPIC_OTHERS,
    ANTHROPIC_OVERFLOWS,
    OPENAI_OTHERS,
    OPENAI_OVERFLOWS,
    _dummy_keys,  # noqa: F401 (autouse: the same API keys)
    raised_by_anthropic,
    raised_by_openai,
)

from context_compact import ContextOverflow
from context_compact.providers.errors import context_overflow, is_context_overflow
from stub_api import ErrorReply, StubAPI

CASES: list[
    tuple[str, Callable[[StubAPI, ErrorReply], BaseException], Callable[[], ErrorReply]]
] = [
    *((f"anthropic {k}", raised_by_anthropic, v) for k, v in ANTHROPIC_OVERFLOWS.items()),
    *((f"openai {k}", raised_by_openai, v) for k, v in OPENAI_OVERFLOWS.items()),
]
OTHERS = [
    *((f"anthropic {k}", raised_by_anthropic, v) for k, v in ANTHROPIC_OTHERS.items()),
    *((f"openai {k}", raised_by_openai, v) for k, v in OPENAI_OTHERS.items()),
]


@pytest.mark.parametrize(("name", "raise_", "answer"), CASES, ids=[c[0] for c in CASES])
def test_every_sdk_refusal_for_length_maps_to_context_overflow(
    name: str,
    raise_: Callable[[StubAPI, ErrorReply], BaseException],
    answer: Callable[[], ErrorReply],
    stub_api: StubAPI,
) -> None:
    error = raise_(stub_api, answer())
    mapped = context_overflow(error)
    assert isinstance(mapped, ContextOverflow)
    assert is_context_overflow(mapped)
    assert mapped.status_code == getattr(error, "status_code", None)
    assert context_overflow(mapped) is mapped


@pytest.mark.parametrize(("name", "raise_", "answer"), OTHERS, ids=[c[0] for c in OTHERS])
def test_every_other_sdk_error_maps_to_none(
    name: str,
    raise_: Callable[[StubAPI, ErrorReply], BaseException],
    answer: Callable[[], ErrorReply],
    stub_api: StubAPI,
) -> None:
    assert context_overflow(raise_(stub_api, answer())) is None


def test_the_figures_of_the_refusal_are_read() -> None:
    error = Exception(
        "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000, decrease"
    )
    mapped = context_overflow(error)
    assert mapped is not None
    assert (mapped.prompt_tokens, mapped.max_tokens, mapped.window) == (199_759, 8192, 200_000)


def test_pydantic_ais_overflow_type_maps_with_the_sdk_error_as_its_cause(stub_api: StubAPI) -> None:
    exceptions = pytest.importorskip("pydantic_ai.exceptions")
    from stub_api import anthropic_prompt_too_long

    cause = raised_by_anthropic(stub_api, anthropic_prompt_too_long(210_000, 200_000))
    framework = exceptions.ModelContextWindowExceededError("claude-test", "prompt is too long")
    framework.__cause__ = cause
    mapped = context_overflow(framework)
    assert mapped is not None
    assert (mapped.prompt_tokens, mapped.window, mapped.status_code) == (210_000, 200_000, 400)


def test_litellms_overflow_type_is_one_whatever_its_words() -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    litellm = pytest.importorskip("litellm")
    error = litellm.ContextWindowExceededError(
        message="the request does not fit", model="claude-fable-5-2", llm_provider="anthropic"
    )
    assert is_context_overflow(error)
