"""The bench counts a refusal only for a request a loop would send."""

from __future__ import annotations

from typing import Any

from context_compact.testing.replay import replay
from context_compact.testing.script import Script


class PassThrough:
    name = "none"

    def prepare(self, messages: list[Any], active_request: str) -> list[Any]:
        return list(messages)


def call(i: int) -> dict[str, Any]:
    use = {"type": "tool_use", "id": f"toolu_{i}", "name": "bash", "input": {"command": "ls"}}
    return {"role": "assistant", "content": [use]}


def result(i: int) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "ok"}
    return {"role": "user", "content": [block]}


def script(steps: list[tuple[dict[str, Any], ...]]) -> Script:
    head = ({"role": "user", "content": "list the files"},)
    return Script("s", head, tuple(steps), ("list the files",) * (len(steps) + 1), ())


def test_a_recording_that_stops_on_an_unanswered_call_is_not_a_refused_request() -> None:
    ended = replay(PassThrough(), script([(call(1), result(1)), (call(2),)]))
    assert ended.api_refusals == 0


def test_an_unanswered_call_inside_the_session_is_still_a_refused_request() -> None:
    never = {"role": "user", "content": "never mind, do something else"}
    broken = replay(PassThrough(), script([(call(1), never), (call(2), result(2))]))
    assert broken.api_refusals == 2  # the request after each step carries the unanswered call
    assert broken.first_refusal is not None and "toolu_1" in broken.first_refusal
