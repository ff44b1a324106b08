"""One ``Runner.run`` of the OpenAI Agents SDK doing 64 tool calls, as the SDK docs write it
(``Runner.run(agent, task, session=session, run_config=...)``), with the session's
``run_config()``: every model call compacted, every refusal recovered, in both modes
(``loop_helpers``); the same through ``Runner.run_streamed`` with its events consumed as the
docs do. ``get_items(limit)`` never starts at a tool output."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    SQLiteSession,
    function_tool,
)
from agents.retry import ModelRetrySettings, RetryDecision
from loop_helpers import (
    MODES,
    TURNS,
    Gate,
    compactor,
    lost,
    replies,
    result,
    size,
    within_or_retried,
)
from openai import AsyncOpenAI

from context_compact import check
from context_compact.formats import openai_chat, openai_responses
from context_compact.integrations.openai_agents import CompactingSession, pair_safe_tail
from stub_api import (
    StubAPI,
    openai_context_length_exceeded,
    openai_input_exceeds_context_window,
    openai_rate_limit,
)

TASK = "read every part of the service log"


@function_tool
def read_log(part: int) -> str:
    """Read one part of the service log."""
    return result(part)


def _agent(stub: StubAPI, api: str) -> tuple[Agent, AsyncOpenAI]:
    client = AsyncOpenAI(base_url=stub.openai_url, api_key="sk-stub", max_retries=0)
    if api == "responses":
        model: Any = OpenAIResponsesModel("gpt-test", client)
        settings = ModelSettings(store=False, response_include=["reasoning.encrypted_content"])
    else:
        model = OpenAIChatCompletionsModel("gpt-test", client)
        settings = ModelSettings()
    agent = Agent(
        name="reader",
        instructions="You read logs.",
        model=model,
        tools=[read_log],
        model_settings=settings,
    )
    return agent, client


def _run(stub: StubAPI, session: CompactingSession, api: str, **config: Any) -> Any:
    async def run() -> Any:
        agent, client = _agent(stub, api)
        result = await Runner.run(
            agent,
            TASK,
            session=session,
            max_turns=TURNS + 5,
            run_config=session.run_config(tracing_disabled=True, **config),
        )
        await client.close()
        return result

    return asyncio.run(run())


def _run_streamed(stub: StubAPI, session: CompactingSession, api: str) -> tuple[Any, list[str]]:
    """``Runner.run_streamed`` as the SDK's streaming guide writes it: the events consumed with
    ``stream_events()``; the run and the types of the events seen."""

    async def run() -> tuple[Any, list[str]]:
        agent, client = _agent(stub, api)
        streamed = Runner.run_streamed(
            agent,
            TASK,
            session=session,
            max_turns=TURNS + 5,
            run_config=session.run_config(tracing_disabled=True),
        )
        kinds = [event.type async for event in streamed.stream_events()]
        await client.close()
        return streamed, kinds

    return asyncio.run(run())


def _violations(bodies: list[Any], api: str) -> list[str]:
    out = []
    for i, body in enumerate(bodies):
        if api == "responses":
            messages = openai_responses.to_canonical(body["input"])[1]
        else:
            messages = openai_chat.to_canonical(body["messages"])[1]
        out += [f"request {i}: {v}" for v in check(messages)]
    return out


@pytest.mark.parametrize(
    ("api", "mode"), [("responses", "equal"), ("responses", "below"), ("chat", "below")]
)
def test_one_run_of_64_tool_calls_is_compacted_at_every_model_call(api: str, mode: str) -> None:
    limit = MODES[mode]
    refusal = (
        (lambda n, m: openai_input_exceeds_context_window())
        if api == "responses"
        else (lambda n, m: openai_context_length_exceeded(m, n))
    )
    thinking = "I should read the next part." if api == "responses" else None
    gate = Gate(replies(thinking=thinking), limit, refusal)
    cc = compactor()
    inner = SQLiteSession("reader")
    session = CompactingSession(inner, cc)
    with StubAPI(*gate.script()) as stub:
        run = _run(stub, session, api)
    assert run.final_output == "all parts read"
    bodies = stub.bodies
    assert len(bodies) == TURNS + 1 + gate.refused
    assert _violations(bodies, api) == []
    assert within_or_retried([size(b) for b in bodies], limit) == []
    if mode == "below":
        assert gate.refused > 0
    assert {e.stage for e in cc.events} & {"clear_old_results", "summarize"}
    assert lost(cc) == []
    # The session stores every item whole; the latest turn goes out as the API gave it.
    stored = asyncio.run(inner.get_items())
    outputs = [i["output"] for i in stored if i.get("type") == "function_call_output"]
    assert outputs == [result(k) for k in range(TURNS)]
    if api == "responses":
        last = bodies[-1]["input"]
        reasoning = [i for i in last if i.get("type") == "reasoning"]
        assert reasoning[-1]["encrypted_content"] == f"gAAAA-stub-{len(bodies) - 1:04d}"
        assert last[-2]["type"] == "function_call"
        assert last[-2]["call_id"] == last[-1]["call_id"] == f"call_{TURNS - 1:03d}"
    inner.close()


@pytest.mark.parametrize("api", ["responses", "chat"])
def test_a_streamed_run_recovers_every_refusal_by_a_smaller_retry(api: str) -> None:
    limit = MODES["below"]
    refusal = (
        (lambda n, m: openai_input_exceeds_context_window())
        if api == "responses"
        else (lambda n, m: openai_context_length_exceeded(m, n))
    )
    gate = Gate(replies(), limit, refusal)
    cc = compactor()
    inner = SQLiteSession("streamed")
    session = CompactingSession(inner, cc)
    with StubAPI(*gate.script()) as stub:
        run, kinds = _run_streamed(stub, session, api)
    assert run.is_complete and run.final_output == "all parts read"
    bodies = stub.bodies
    assert all(body.get("stream") is True for body in bodies)  # every call went out streamed
    assert "raw_response_event" in kinds and "run_item_stream_event" in kinds
    assert gate.refused > 0
    assert len(bodies) == TURNS + 1 + gate.refused
    assert within_or_retried([size(b) for b in bodies], limit) == []
    assert _violations(bodies, api) == []
    assert lost(cc) == []
    stored = asyncio.run(inner.get_items())
    outputs = [i["output"] for i in stored if i.get("type") == "function_call_output"]
    assert outputs == [result(k) for k in range(TURNS)]
    inner.close()


def test_other_errors_go_to_the_callers_own_retry_policy() -> None:
    seen: list[Any] = []

    def policy(context: Any) -> RetryDecision:
        seen.append(context.error)
        return RetryDecision(retry=True, delay=0.0)

    gate = Gate(replies(1), MODES["equal"], lambda n, m: openai_input_exceeds_context_window())
    session = CompactingSession(SQLiteSession("reader"), compactor())
    settings = ModelSettings(retry=ModelRetrySettings(max_retries=2, policy=policy))
    with StubAPI(openai_rate_limit(), *gate.script()) as stub:
        run = _run(stub, session, "responses", model_settings=settings)
    assert run.final_output == "all parts read"
    assert len(seen) == 1 and getattr(seen[0], "status_code", None) == 429


def _items(turns: int) -> list[Any]:
    items: list[Any] = [{"role": "user", "content": TASK}]
    for k in range(turns):
        items += [
            {"type": "reasoning", "id": f"rs_{k}", "summary": [], "encrypted_content": "x"},
            {"type": "function_call", "call_id": f"c{k}", "name": "read_log", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{k}", "output": f"part {k}"},
        ]
    return items


@pytest.mark.parametrize("limit", range(1, 10))
def test_get_items_with_a_limit_never_returns_a_tool_output_without_its_call(limit: int) -> None:
    async def items() -> list[Any]:
        inner = SQLiteSession("tail")
        await inner.add_items(_items(3))
        out = await CompactingSession(inner, compactor()).get_items(limit=limit)
        inner.close()
        return out

    out = asyncio.run(items())
    assert len(out) <= limit
    calls = {i["call_id"] for i in out if i.get("type") == "function_call"}
    outputs = {i["call_id"] for i in out if i.get("type") == "function_call_output"}
    assert outputs <= calls
    # Neither an output cut off from its call nor a call cut off from its reasoning item.
    assert not out or out[0].get("type") not in ("function_call_output", "function_call")


def test_the_pair_safe_tail_is_the_plain_tail_where_that_is_safe() -> None:
    items = _items(2)
    assert pair_safe_tail(items, 3) == items[-3:]
    assert pair_safe_tail(items, 2) == []
    assert pair_safe_tail(items, 0) == []
    assert pair_safe_tail(items, 100) == items


def _parallel(turns: int, width: int) -> list[dict[str, Any]]:
    """A Responses history whose turns each run ``width`` calls in parallel: every call of a
    turn comes before any of their outputs."""
    items: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for t in range(turns):
        ids = [f"call_{t}_{k}" for k in range(width)]
        items += [
            {"type": "function_call", "call_id": i, "name": "f", "arguments": "{}"} for i in ids
        ]
        items += [{"type": "function_call_output", "call_id": i, "output": "ok"} for i in ids]
        items.append({"role": "assistant", "content": f"turn {t} done"})
    return items


@pytest.mark.parametrize("width", [1, 2, 3, 5])
def test_no_limited_tail_splits_a_parallel_call_from_its_output(width: int) -> None:
    items = _parallel(4, width)
    for limit in range(len(items) + 2):
        out = pair_safe_tail(items, limit)
        assert len(out) <= limit and out == items[len(items) - len(out) :]
        calls = {i["call_id"] for i in out if i.get("type") == "function_call"}
        outputs = {i["call_id"] for i in out if i.get("type") == "function_call_output"}
        assert outputs <= calls, (width, limit)
