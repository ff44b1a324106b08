"""The API's refusal of a thinking block whose prefix changed, and its list of dropped
blocks, read from the real SDK's exception and response (against the test API)."""

from __future__ import annotations

import anthropic
import pytest

from context_compact.errors import ThinkingRefused
from context_compact.providers.errors import is_context_overflow
from context_compact.providers.thinking import dropped_paths, recoverable, thinking_refused
from stub_api import Reply, StubAPI, anthropic_invalid_request, anthropic_prompt_too_long

WORDS = (
    "Invalid `signature` in `thinking` block. The block is bound to a different "
    "conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` "
    'to "drop_block".'
)


def _raised(item: object) -> Exception:
    with StubAPI(item) as stub:  # type: ignore[arg-type]
        client = anthropic.Anthropic(base_url=stub.url, api_key="test", max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as caught:
            client.messages.create(
                model="claude-fable-5-2", max_tokens=8, messages=[{"role": "user", "content": "x"}]
            )
    return caught.value


@pytest.mark.parametrize(
    ("text", "where"),
    [(f"messages.4.content.1: {WORDS}", (4, 1)), (WORDS, (None, None))],
)
def test_the_refusal_is_recognized_with_or_without_the_blocks_place(
    text: str, where: tuple[int | None, int | None]
) -> None:
    error = _raised(anthropic_invalid_request(text))
    refused = thinking_refused(error)
    assert isinstance(refused, ThinkingRefused)
    assert (refused.message_index, refused.block_index) == where
    assert refused.status_code == 400
    assert not is_context_overflow(error)
    assert recoverable(error) is error


def test_other_refusals_are_not_taken_for_it() -> None:
    too_long = _raised(anthropic_prompt_too_long())
    assert thinking_refused(too_long) is None and recoverable(too_long) is too_long
    other = _raised(anthropic_invalid_request("messages.1.content.0: Invalid `signature`"))
    assert thinking_refused(other) is None and recoverable(other) is None


def test_the_dropped_blocks_are_read_from_the_sdks_response() -> None:
    dropped = [
        {
            "type": "thinking_dropped",
            "path": "messages.3.content.0",
            "reason": "prefix_binding_mismatch",
        },
        {
            "type": "thinking_mismatch_allowed",
            "path": "messages.5.content.0",
            "reason": "prefix_binding_mismatch",
        },
        {
            "type": "thinking_dropped",
            "path": "messages.5.content.0",
            "reason": "prefix_binding_mismatch",
        },
    ]

    def answer(body: object) -> Reply:
        return Reply(text="ok")

    with StubAPI(answer) as stub:
        client = anthropic.Anthropic(base_url=stub.url, api_key="test", max_retries=0)
        raw = client.messages.with_raw_response.create(
            model="claude-opus-4-8", max_tokens=8, messages=[{"role": "user", "content": "x"}]
        )
        body = raw.http_response.json()
    body["input_transformations"] = dropped
    message = anthropic.types.Message.model_validate(body)
    assert dropped_paths(message) == [(3, 0), (5, 0)]
    assert dropped_paths(body) == [(3, 0), (5, 0)]
    assert dropped_paths(Reply(text="no field")) == []
