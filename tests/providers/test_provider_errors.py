"""``is_context_overflow`` against real SDK exceptions raised by answers of the stub server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

import stub_api as s
from context_compact.providers.errors import is_context_overflow
from stub_api import ErrorReply, StubAPI, closed_port_url

HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture(autouse=True)
def _dummy_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    for name in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def anthropic_error(base_url: str) -> BaseException:
    client = anthropic.Anthropic(base_url=base_url, max_retries=0, timeout=5)
    try:
        with pytest.raises(anthropic.APIError) as info:
            client.messages.create(model="claude-test", max_tokens=16, messages=HELLO)  # type: ignore[arg-type]
    finally:
        client.close()
    return info.value


def openai_error(base_url: str) -> BaseException:
    client = openai.OpenAI(base_url=base_url, max_retries=0, timeout=5)
    try:
        with pytest.raises(openai.APIError) as info:
            client.chat.completions.create(model="gpt-test", max_tokens=16, messages=HELLO)  # type: ignore[arg-type]
    finally:
        client.close()
    return info.value


def raised_by_anthropic(stub: StubAPI, answer: ErrorReply) -> BaseException:
    stub.enqueue(answer)
    return anthropic_error(stub.url)


def raised_by_openai(stub: StubAPI, answer: ErrorReply) -> BaseException:
    stub.enqueue(answer)
    return openai_error(stub.openai_url)


ANTHROPIC_OVERFLOWS: dict[str, Callable[[], ErrorReply]] = {
    "prompt is too long": s.anthropic_prompt_too_long,
    "input length and max_tokens exceed context limit": s.anthropic_input_and_max_tokens_exceed,
    "413 request_too_large": s.anthropic_request_too_large,
}

ANTHROPIC_OTHERS: dict[str, Callable[[], ErrorReply]] = {
    "429 rate limit mentioning tokens": s.anthropic_rate_limit,
    "529 overloaded": s.anthropic_overloaded,
    "500 api_error": s.anthropic_api_error,
    "401 authentication": s.anthropic_authentication_error,
    "403 permission": s.anthropic_permission_error,
    "400 roles must alternate": lambda: s.anthropic_invalid_request(
        'messages: roles must alternate between "user" and "assistant", but found multiple'
        ' "user" roles in a row'
    ),
    "400 max_tokens above the model's output limit": lambda: s.anthropic_invalid_request(
        "max_tokens: 10000 > 4096, which is the maximum allowed number of output tokens for"
        " claude-3-5-sonnet-20240620"
    ),
}

OPENAI_OVERFLOWS: dict[str, Callable[[], ErrorReply]] = {
    "chat completions context_length_exceeded": s.openai_context_length_exceeded,
    "responses api context window wording": s.openai_input_exceeds_context_window,
    "configured input limit without a code": s.openai_input_tokens_exceed_configured_limit,
    "llama.cpp 400 exceed_context_size_error": s.llamacpp_exceed_context,
    "llama.cpp 500 exceed_context_size_error": lambda: s.llamacpp_exceed_context(status=500),
    "vllm flat error body": s.vllm_context_length_exceeded,
    "vllm wrapped error body": lambda: s.vllm_context_length_exceeded(wrapped=True),
}

OPENAI_OTHERS: dict[str, Callable[[], ErrorReply]] = {
    "429 tokens per minute": s.openai_rate_limit,
    "429 request too large for tokens per minute": s.openai_request_too_large_for_tpm,
    "500 server error": s.openai_server_error,
    "401 invalid api key": s.openai_authentication_error,
    "400 unrelated": lambda: s.openai_invalid_request(
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding"
        " message with 'tool_calls'.",
        param="messages.[1].role",
    ),
    "llama.cpp 500 unrelated": lambda: ErrorReply(
        500,
        {
            "error": {
                "code": 500,
                "message": "Jinja Exception: bad template",
                "type": "server_error",
            }
        },
    ),
}


@pytest.mark.parametrize("answer", ANTHROPIC_OVERFLOWS.values(), ids=ANTHROPIC_OVERFLOWS.keys())
def test_s5_3_anthropic_overflow_refusals_are_context_overflows(
    stub_api: StubAPI, answer: Callable[[], ErrorReply]
) -> None:
    assert is_context_overflow(raised_by_anthropic(stub_api, answer()))


@pytest.mark.parametrize("answer", ANTHROPIC_OTHERS.values(), ids=ANTHROPIC_OTHERS.keys())
def test_other_anthropic_errors_are_not_context_overflows(
    stub_api: StubAPI, answer: Callable[[], ErrorReply]
) -> None:
    assert not is_context_overflow(raised_by_anthropic(stub_api, answer()))


@pytest.mark.parametrize("answer", OPENAI_OVERFLOWS.values(), ids=OPENAI_OVERFLOWS.keys())
def test_s5_3_openai_compatible_overflow_refusals_are_context_overflows(
    stub_api: StubAPI, answer: Callable[[], ErrorReply]
) -> None:
    assert is_context_overflow(raised_by_openai(stub_api, answer()))


@pytest.mark.parametrize("answer", OPENAI_OTHERS.values(), ids=OPENAI_OTHERS.keys())
def test_other_openai_compatible_errors_are_not_context_overflows(
    stub_api: StubAPI, answer: Callable[[], ErrorReply]
) -> None:
    assert not is_context_overflow(raised_by_openai(stub_api, answer()))


def test_the_sdks_raise_the_exception_classes_the_decision_is_read_from(
    stub_api: StubAPI,
) -> None:
    too_long = raised_by_anthropic(stub_api, s.anthropic_prompt_too_long())
    assert isinstance(too_long, anthropic.BadRequestError)
    assert too_long.status_code == 400
    assert too_long.type == "invalid_request_error"
    assert too_long.request_id is not None
    assert isinstance(
        raised_by_anthropic(stub_api, s.anthropic_overloaded()), anthropic.APIStatusError
    )
    exceeded = raised_by_openai(stub_api, s.openai_context_length_exceeded())
    assert isinstance(exceeded, openai.BadRequestError)
    assert exceeded.code == "context_length_exceeded"
    llama = raised_by_openai(stub_api, s.llamacpp_exceed_context(status=500))
    assert isinstance(llama, openai.InternalServerError)
    assert llama.type == "exceed_context_size_error"


def test_a_refused_connection_is_not_a_context_overflow() -> None:
    url = closed_port_url()
    for error in (anthropic_error(url), openai_error(f"{url}/v1")):
        assert isinstance(error, anthropic.APIConnectionError | openai.APIConnectionError)
        assert not is_context_overflow(error)


@pytest.mark.parametrize(
    "message",
    [
        "prompt is too long: 210000 tokens > 200000 maximum",
        "This model's maximum context length is 8192 tokens. However, your messages resulted in"
        " 9000 tokens.",
        "the request exceeds the available context size, try increasing it",
        "Your input exceeds the context window of this model.",
        "Input tokens exceed the configured limit of 272000 tokens.",
        "prompt_too_long",
        "Too many tokens in the request",
    ],
)
def test_plain_exceptions_carrying_an_overflow_message_count(message: str) -> None:
    assert is_context_overflow(RuntimeError(message))


@pytest.mark.parametrize(
    "message", ["Connection refused", "Overloaded", "messages: roles must alternate", ""]
)
def test_plain_exceptions_with_other_messages_do_not_count(message: str) -> None:
    assert not is_context_overflow(RuntimeError(message))


class LookAlike(Exception):
    """An exception with the attributes the check reads, as other clients might raise."""

    def __init__(self, status_code: int | None, message: str, body: Any = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = body


def test_legacy_phrases_count_on_a_400_but_not_on_a_rate_limit() -> None:
    assert is_context_overflow(LookAlike(400, "too many tokens"))
    assert is_context_overflow(LookAlike(400, "error: prompt_too_long"))
    assert not is_context_overflow(LookAlike(429, "too many tokens"))
    assert not is_context_overflow(LookAlike(422, "too many tokens"))


def test_the_scripted_fake_overflow_counts() -> None:
    fake = pytest.importorskip("context_compact.testing.model")
    assert is_context_overflow(fake.FakeContextOverflow(300, 200))


OVERFLOW_TEXT = st.sampled_from(
    [
        "prompt is too long: 5 tokens > 4 maximum",
        "This model's maximum context length is 4 tokens",
        "exceeds the available context size",
        "too many tokens",
    ]
)


@given(
    status=st.sampled_from([401, 402, 403, 404, 408, 429, 500, 502, 503, 529]),
    before=st.text(max_size=20),
    phrase=OVERFLOW_TEXT,
)
def test_no_message_turns_a_rate_limit_auth_or_server_error_into_an_overflow(
    status: int, before: str, phrase: str
) -> None:
    body = {"type": "error", "error": {"type": "api_error", "message": before + phrase}}
    assert not is_context_overflow(LookAlike(status, before + phrase, body))


@given(status=st.sampled_from([400, 413, 500]), message=st.text(max_size=40))
def test_an_overflow_type_in_the_body_decides_whatever_the_message(
    status: int, message: str
) -> None:
    body = {"error": {"code": status, "message": message, "type": "exceed_context_size_error"}}
    assert is_context_overflow(LookAlike(status, message, body))
