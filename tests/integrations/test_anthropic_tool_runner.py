"""The Anthropic SDK's own agent loop, ``client.beta.messages.tool_runner``, through
``compacting()``, as the SDK docs write it (``@beta_tool`` functions, ``for message in
runner``), thinking on: 64 tool turns of 2-40 KB results, in both modes (``loop_helpers``)."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import pytest
from anthropic import beta_async_tool, beta_tool
from loop_helpers import (
    MODES,
    THINKING,
    TURNS,
    Gate,
    compactor,
    lost,
    replies,
    result,
    size,
    within_or_retried,
)

import api_rules
from context_compact import check
from context_compact.integrations import compacting
from stub_api import StubAPI, anthropic_prompt_too_long

TASK = "read every part of the service log"


@beta_tool
def read_log(part: int) -> str:
    """Read one part of the service log.

    Args:
        part: which part to read
    """
    return result(part)


async def _read_log(part: int) -> str:
    """Read one part of the service log.

    Args:
        part: which part to read
    """
    return result(part)


aread_log = beta_async_tool(_read_log, name="read_log")


def _checks(stub: StubAPI, gate: Gate, limit: int, cc: Any, final: Any) -> None:
    bodies = stub.bodies
    assert final.content[-1].text == "all parts read"
    assert len(bodies) == TURNS + 1 + gate.refused
    assert [f"{i}: {v}" for i, b in enumerate(bodies) for v in check(b["messages"])] == []
    assert within_or_retried([size(b) for b in bodies], limit) == []
    assert lost(cc) == []
    assert {e.stage for e in cc.events} & {"clear_old_results", "summarize", "reactive_compact"}
    # Ids and reasoning intact: the latest turn goes out as the API gave it.
    last = bodies[-1]["messages"]
    assistant = last[-2]
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": THINKING,
        "signature": api_rules.sign(THINKING),
    }
    assert assistant["content"][-1]["id"] == f"call_{TURNS - 1:03d}"
    assert last[-1]["content"][0]["tool_use_id"] == f"call_{TURNS - 1:03d}"
    assert last[0] == {"role": "user", "content": TASK}


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_tool_runner_runs_64_turns_compacted_and_recovers_every_refusal(mode: str) -> None:
    limit = MODES[mode]
    gate = Gate(replies(thinking=THINKING), limit, anthropic_prompt_too_long)
    cc = compactor()
    with StubAPI(*gate.script()) as stub:
        client = compacting(
            anthropic.Anthropic(base_url=stub.url, api_key="sk-stub", max_retries=0), cc
        )
        runner = client.beta.messages.tool_runner(
            model="claude-test",
            max_tokens=1024,
            thinking={"type": "enabled", "budget_tokens": 512},
            tools=[read_log],
            messages=[{"role": "user", "content": TASK}],
        )
        for message in runner:
            final = message
    _checks(stub, gate, limit, cc, final)
    if mode == "below":
        assert gate.refused > 0


def test_the_async_tool_runner_is_compacted_too() -> None:
    limit = MODES["below"]
    gate = Gate(replies(thinking=THINKING), limit, anthropic_prompt_too_long)
    cc = compactor()

    async def run(stub: StubAPI) -> Any:
        raw = anthropic.AsyncAnthropic(base_url=stub.url, api_key="sk-stub", max_retries=0)
        client = compacting(raw, cc)
        runner = client.beta.messages.tool_runner(
            model="claude-test",
            max_tokens=1024,
            thinking={"type": "enabled", "budget_tokens": 512},
            tools=[aread_log],
            messages=[{"role": "user", "content": TASK}],
        )
        final = await runner.until_done()
        await raw.close()
        return final

    with StubAPI(*gate.script()) as stub:
        final = asyncio.run(run(stub))
    _checks(stub, gate, limit, cc, final)


def test_beta_messages_create_is_compacted_and_retried_once_like_messages_create() -> None:
    cc = compactor()
    big = [{"role": "user", "content": TASK}]
    for k in range(20):
        call = {"type": "tool_use", "id": f"t{k}", "name": "read_log", "input": {"part": k}}
        big += [
            {"role": "assistant", "content": [call]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{k}", "content": result(k)}],
            },
        ]
    gate = Gate(replies(1), MODES["below"], anthropic_prompt_too_long)
    with StubAPI(*gate.script()) as stub:
        client = compacting(
            anthropic.Anthropic(base_url=stub.url, api_key="sk-stub", max_retries=0), cc
        )
        client.beta.messages.create(model="claude-test", max_tokens=100, messages=big)
    assert stub.requests[0].path == "/v1/messages"
    assert size(stub.bodies[-1]) <= MODES["below"]
    assert check(stub.bodies[-1]["messages"]) == []


def test_a_request_that_continues_a_server_thread_goes_out_untouched() -> None:
    cc = compactor()
    messages = [{"role": "user", "content": "x" * 200_000}]
    with StubAPI(*replies(0)) as stub:
        client = compacting(
            anthropic.Anthropic(base_url=stub.url, api_key="sk-stub", max_retries=0), cc
        )
        client.beta.messages.create(
            model="claude-test",
            max_tokens=100,
            messages=messages,
            extra_body={},
            thread={"type": "continue", "previous_message_id": "msg_1"},  # type: ignore[arg-type]
        )
    assert stub.bodies[0]["messages"] == messages
    assert cc.events == []
