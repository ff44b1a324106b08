"""A recorded session cut into turns (``loaders.turns``): the head and the steps are the
session's messages, in order, each once; one step opens at each assistant message after the
head; one active request per call."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from context_compact.loaders.turns import turns
from context_compact.messages import Message

ROLES = st.lists(st.sampled_from(["user", "assistant", "result"]), max_size=30)


def as_messages(roles: list[str]) -> list[Message]:
    out: list[Message] = []
    for n, role in enumerate(roles):
        if role == "result":
            result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": "ok"}
            out.append({"role": "user", "content": [result]})
        else:
            out.append({"role": role, "content": f"{role} says {n}"})
    return out


@given(ROLES)
def test_the_head_and_the_steps_are_the_sessions_messages_in_order(roles: list[str]) -> None:
    messages = as_messages(roles)
    cut = turns(messages)
    joined = cut.messages
    assert len(joined) == len(messages)
    assert all(a is b for a, b in zip(joined, messages, strict=True))
    assert len(cut.requests) == cut.turns + 1
    assert all(step and step[0]["role"] == "assistant" for step in cut.steps[1:])


def test_each_call_is_told_the_latest_user_request() -> None:
    messages = as_messages(["user", "assistant", "result", "assistant", "user", "assistant"])
    cut = turns(messages)
    assert len(cut.head) == 1 and cut.turns == 3
    assert cut.requests == ("user says 0", "user says 0", "user says 4", "user says 4")


def test_a_session_without_an_assistant_message_is_one_head_message_and_one_step() -> None:
    cut = turns(as_messages(["user", "user"]))
    assert [len(cut.head), [len(s) for s in cut.steps]] == [1, [1]]
    assert turns([]).requests == ("",) and turns([]).messages == []
