"""Provider faults through the real SDKs and the loopback stub: what the loop survives.

Transient failures (429, 5xx, 529, a dropped or truncated connection) are retried by the
SDK itself, with its backoff, ``max_retries`` times (our providers and the CLI pass it on);
the stub answers ``retry-after-ms: 1`` so the tests do not sleep through real backoff. A
refusal for length is sized from its own numbers. What cannot be survived ends the run with
an ``AgentError`` whose history is valid and already in the session log, so a new process
resumes it. Our providers never ask for a stream, so an error event in the middle of a
stream cannot reach them; the nearest thing, a body cut off mid-way, is tried here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import stub_api as s
from context_compact import Compactor, Policy, SqliteStore, check
from context_compact.agent.loop import MIN_OUTPUT_TOKENS, Agent, AgentError, Refusal
from context_compact.agent.tools import Workspace
from context_compact.providers.anthropic import AnthropicProvider
from context_compact.providers.errors import OverflowFigures, is_context_overflow, overflow_figures
from context_compact.providers.openai_chat import OpenAIChatProvider, from_openai
from stub_api import Drop, ErrorReply, Reply, StubAPI, Truncated, fast_retry

REQUEST = "Look at the notes."
Message = dict[str, Any]


@pytest.fixture(params=["anthropic", "openai"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    (root / "notes.txt").write_text("remember the milk\n" * 50, encoding="utf-8")
    return root


@pytest.fixture
def store(work: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore(work / ".context-compact" / "sessions.db", root=work)
    yield opened
    opened.close()


def provider(kind: str, stub: StubAPI, max_retries: int) -> AnthropicProvider | OpenAIChatProvider:
    if kind == "anthropic":
        return AnthropicProvider(
            "claude-test", api_key="sk-ant-test", base_url=stub.url, timeout=5,
            max_retries=max_retries,
        )  # fmt: skip
    return OpenAIChatProvider(
        "gpt-test", api_key="sk-test", base_url=stub.openai_url, timeout=5, max_retries=max_retries
    )


@pytest.fixture
def make(
    kind: str, stub_api: StubAPI, work: Path, store: SqliteStore
) -> Iterator[Callable[..., tuple[Agent, list[Any]]]]:
    opened: list[AnthropicProvider | OpenAIChatProvider] = []

    def make_(max_retries: int = 0, **policy: Any) -> tuple[Agent, list[Any]]:
        model = provider(kind, stub_api, max_retries)
        opened.append(model)
        events: list[Any] = []
        compactor = Compactor(Policy.default(**policy), store)
        workspace = Workspace(work, bash_timeout=5)
        return Agent(model, compactor, workspace, on_event=events.append), events

    yield make_
    for model in opened:
        model.close()


def read_notes() -> Reply:
    return Reply(text="Reading.", tool_calls=(s.ToolCall("read_file", {"path": "notes.txt"}),))


def rate_limit(kind: str) -> ErrorReply:
    return fast_retry(s.anthropic_rate_limit() if kind == "anthropic" else s.openai_rate_limit())


def server_errors(kind: str) -> list[ErrorReply]:
    if kind == "anthropic":
        return [fast_retry(s.anthropic_overloaded()), fast_retry(s.anthropic_api_error())]
    unavailable = ErrorReply(503, {"error": {"message": "Service Unavailable", "type": None}})
    return [fast_retry(s.openai_server_error()), fast_retry(unavailable)]


def canonical(body: Any) -> list[Message]:
    if "system" in body or body["messages"][0]["role"] != "system":
        return list(body["messages"])
    return from_openai(body["messages"])[1]


def output_budget(body: Any) -> int:
    return int(body["max_tokens"])


# -- retried by the SDK ----------------------------------------------------------------------


def test_a_rate_limit_is_retried_by_the_sdk_and_the_run_goes_on(
    kind: str, stub_api: StubAPI, make: Any
) -> None:
    stub_api.enqueue(read_notes(), rate_limit(kind), Reply(text="done"))
    agent, _ = make(max_retries=2)
    result = agent.run([], REQUEST)
    assert result.text == "done"
    _, refused, retried = stub_api.bodies
    assert retried == refused  # the same request again, not a compacted one
    assert len(stub_api.requests) == 3


def test_overloaded_and_server_errors_are_retried_until_one_succeeds(
    kind: str, stub_api: StubAPI, make: Any
) -> None:
    stub_api.enqueue(*server_errors(kind), Reply(text="done"))
    agent, events = make(max_retries=2)
    assert agent.run([], REQUEST).text == "done"
    assert len(stub_api.requests) == 3
    assert not [e for e in events if isinstance(e, Refusal)]


@pytest.mark.parametrize("max_retries", [0, 1, 3])
def test_max_retries_sets_how_many_times_the_sdk_tries_again(
    kind: str, stub_api: StubAPI, make: Any, max_retries: int
) -> None:
    stub_api.enqueue(*[rate_limit(kind) for _ in range(max_retries + 1)], Reply(text="unused"))
    agent, _ = make(max_retries=max_retries)
    with pytest.raises(AgentError, match=r"model call failed: RateLimitError \(HTTP 429\)") as err:
        agent.run([], REQUEST)
    assert len(stub_api.requests) == max_retries + 1
    assert stub_api.pending == 1
    assert err.value.history == [{"role": "user", "content": REQUEST}]


def test_a_dropped_connection_is_retried_and_the_run_goes_on(
    kind: str, stub_api: StubAPI, make: Any
) -> None:
    stub_api.enqueue(read_notes(), Drop(), Reply(text="done"))
    agent, _ = make(max_retries=1)
    assert agent.run([], REQUEST).text == "done"
    assert len(stub_api.requests) == 3
    assert stub_api.bodies[1] == stub_api.bodies[2]


@pytest.mark.parametrize("fault", [Drop(), Truncated(Reply(text="cut " * 200))], ids=repr)
def test_a_connection_lost_for_good_ends_the_run_with_a_valid_logged_history(
    kind: str, stub_api: StubAPI, make: Any, store: SqliteStore, fault: Any
) -> None:
    stub_api.enqueue(read_notes(), fault)
    agent, _ = make(max_retries=0)
    with pytest.raises(AgentError, match="APIConnectionError") as err:
        agent.run([], REQUEST)
    history = err.value.history
    assert check(history) == []
    assert [m["role"] for m in history] == ["user", "assistant", "user"]
    # The session log has it all: a new process resumes from there.
    sid = agent.compactor.session_id
    assert Compactor(Policy.default(), store, session=sid).view() == history


def test_a_run_resumed_after_a_dropped_connection_sends_everything_it_had(
    kind: str, stub_api: StubAPI, make: Any, store: SqliteStore, work: Path
) -> None:
    stub_api.enqueue(read_notes(), Drop())
    agent, _ = make(max_retries=0)
    with pytest.raises(AgentError):
        agent.run([], REQUEST)
    sid = agent.compactor.session_id
    stub_api.enqueue(Reply(text="The notes say: remember the milk."))
    resumed = Compactor(Policy.default(), store, session=sid)
    again = Agent(provider(kind, stub_api, 0), resumed, Workspace(work))
    result = again.run(resumed.view(), "Go on.")
    assert result.text == "The notes say: remember the milk."
    dropped, sent = stub_api.bodies[1]["messages"], stub_api.bodies[-1]["messages"]
    # What the dropped call carried, then the new request.
    assert sent[: len(dropped)] == dropped
    assert sent[len(dropped) :] == [{"role": "user", "content": "Go on."}]
    assert "remember the milk" in json.dumps(sent)


def test_our_providers_never_ask_for_a_stream(kind: str, stub_api: StubAPI, make: Any) -> None:
    stub_api.enqueue(read_notes(), Reply(text="done"))
    agent, _ = make()
    agent.run([], REQUEST)
    assert all("stream" not in body for body in stub_api.bodies)


# -- refusals sized from their numbers ------------------------------------------------------


def exceeds(kind: str, prompt: int, output: int, window: int) -> ErrorReply:
    if kind == "anthropic":
        return s.anthropic_input_and_max_tokens_exceed(prompt, output, window)
    return s.vllm_context_length_exceeded(maximum=window, messages=prompt, completion=output)


def test_input_plus_max_tokens_over_the_window_is_retried_with_a_smaller_max_tokens(
    kind: str, stub_api: StubAPI, make: Any
) -> None:
    stub_api.enqueue(read_notes(), exceeds(kind, 195_000, 8_000, 200_000), Reply(text="done"))
    stub_api.enqueue(Reply(text="unused"))
    agent, events = make()
    assert agent.run([], REQUEST).text == "done"
    _, refused, retried, *_ = stub_api.bodies
    assert output_budget(refused) == 8_000
    assert output_budget(retried) == 200_000 - 195_000
    assert canonical(retried) == canonical(refused)  # nothing compacted: it fits as it is
    (refusal,) = [e for e in events if isinstance(e, Refusal)]
    assert refusal.recovered and refusal.retry_max_tokens == 5_000


def test_the_output_budget_is_back_to_full_on_the_next_turn(
    kind: str, stub_api: StubAPI, make: Any
) -> None:
    stub_api.enqueue(exceeds(kind, 196_000, 8_000, 200_000), read_notes(), Reply(text="done"))
    agent, _ = make()
    agent.run([], REQUEST)
    assert [output_budget(b) for b in stub_api.bodies] == [8_000, 4_000, 8_000]


def test_too_little_room_for_an_answer_compacts_instead_calibrated_by_the_apis_count(
    kind: str, stub_api: StubAPI, make: Any
) -> None:
    reads = [read_notes() for _ in range(6)]
    # The API counts the prompt at almost the whole window: no room for any answer.
    window = 30_000
    refusal = exceeds(kind, window - MIN_OUTPUT_TOKENS // 2, 8_000, window)
    stub_api.enqueue(*reads, refusal, Reply(text="done"))
    agent, events = make(context_limit=window)
    assert agent.run([], REQUEST).text == "done"
    refused, retried = stub_api.bodies[-2], stub_api.bodies[-1]
    # The window the refusal stated is adopted: the limit becomes 30,000 less a quarter of it
    # for the reply (the limit given was the whole window), and the reply keeps that room.
    assert output_budget(retried) == 7_500
    assert len(json.dumps(canonical(retried))) < len(json.dumps(canonical(refused))) // 2
    assert check(canonical(retried)) == []
    assert [e.recovered for e in events if isinstance(e, Refusal)] == [True]


def test_a_lowered_budget_that_is_refused_again_falls_back_to_compaction(
    kind: str, stub_api: StubAPI, make: Any
) -> None:
    stub_api.enqueue(*[read_notes() for _ in range(4)])
    stub_api.enqueue(exceeds(kind, 150_000, 8_000, 155_000))
    stub_api.enqueue(exceeds(kind, 150_000, 5_000, 155_000), Reply(text="done"))
    agent, events = make()
    assert agent.run([], REQUEST).text == "done"
    refusals = [e for e in events if isinstance(e, Refusal)]
    assert [(r.recovered, r.retry_max_tokens) for r in refusals] == [(True, 5_000), (True, None)]
    assert len(stub_api.bodies[-1]["messages"]) < len(stub_api.bodies[-2]["messages"])


def test_a_request_too_large_413_is_compacted_and_retried(stub_api: StubAPI, make: Any) -> None:
    stub_api.enqueue(*[read_notes() for _ in range(4)], s.anthropic_request_too_large())
    stub_api.enqueue(Reply(text="done"))
    agent, events = make()
    assert agent.run([], REQUEST).text == "done"
    assert [e.recovered for e in events if isinstance(e, Refusal)] == [True]
    assert len(json.dumps(stub_api.bodies[-1])) < len(json.dumps(stub_api.bodies[-2]))


# -- the numbers a refusal carries, read off the SDKs' own exceptions -------------------------

FIGURES = {
    "anthropic A + B > C": (
        "anthropic",
        lambda: s.anthropic_input_and_max_tokens_exceed(178_959, 64_000, 200_000),
        OverflowFigures(178_959, 64_000, 200_000),
    ),
    "anthropic prompt too long": (
        "anthropic",
        lambda: s.anthropic_prompt_too_long(209_353, 199_999),
        OverflowFigures(209_353, None, 199_999),
    ),
    "anthropic 413": ("anthropic", s.anthropic_request_too_large, OverflowFigures()),
    "openai context length": (
        "openai",
        lambda: s.openai_context_length_exceeded(8_192, 8_202),
        OverflowFigures(8_202, None, 8_192),
    ),
    "openai gpt-5 limit": (
        "openai",
        s.openai_input_tokens_exceed_configured_limit,
        OverflowFigures(289_650, None, 272_000),
    ),
    "vllm messages and completion": (
        "openai",
        s.vllm_context_length_exceeded,
        OverflowFigures(112_946, 10_000, 16_384),
    ),
    "vllm wrapped": (
        "openai",
        lambda: s.vllm_context_length_exceeded(wrapped=True),
        OverflowFigures(112_946, 10_000, 16_384),
    ),
    "llama.cpp fields": ("openai", s.llamacpp_exceed_context, OverflowFigures(14_429, None, 8_192)),
    "responses wording without numbers": (
        "openai",
        s.openai_input_exceeds_context_window,
        OverflowFigures(),
    ),
}


@pytest.mark.parametrize("case", list(FIGURES))
def test_the_figures_of_each_refusal_wording_are_read_from_the_sdk_exception(
    stub_api: StubAPI, case: str
) -> None:
    which, answer, expected = FIGURES[case]
    stub_api.enqueue(answer())
    model = provider(which, stub_api, 0)
    try:
        with pytest.raises(Exception) as raised:
            model.complete(
                system="", messages=[{"role": "user", "content": "hi"}], tools=[], max_tokens=16
            )
    finally:
        model.close()
    assert is_context_overflow(raised.value)
    assert overflow_figures(raised.value) == expected


def test_a_refusal_without_numbers_gives_no_figures_rather_than_a_guess() -> None:
    assert overflow_figures(ValueError("prompt is too long")) == OverflowFigures()
    assert OverflowFigures(prompt_tokens=5).output_room is None
