"""The user's words stay in view verbatim under the default engine (issue 12).

Every user-authored message (not tool results) is pinned, in order, with the short assistant
text it answered; past ``user_words_share`` of the limit the oldest fold into the summary,
which names each by message number and archive.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import api_rules
from api_rules import thinking_request
from context_compact import Compactor, MemoryStore, Policy, check
from context_compact.messages import is_request
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session
from histories import assistant, histories, user

REQUEST = "Fix the failing tests in the parser and keep the public API unchanged."
CORRECTIONS = {
    12: (None, "Do not touch src/api.py; it is frozen until the release."),
    30: ("Should I use the regex tokenizer or the hand-written one?", "The hand-written one."),
    55: (None, "Also: tests must run without network access."),
    80: ("Is Python 3.9 still supported?", "No, 3.11 and later only."),
    110: (None, "Stop editing the fixtures; generate them with make fixtures instead."),
    140: ("Squash the commits?", "Keep them separate, one per fix."),
    170: (None, "Name the branch fix/parser-empty-input."),
}


def compactor(limit: int, **overrides: Any) -> tuple[Compactor, MemoryStore]:
    store = MemoryStore()
    policy = Policy.default(context_limit=limit, **overrides)
    return Compactor(policy, store, BenchSummarizer()), store


def summary_of(view: list[dict[str, Any]]) -> str:
    return next((m["content"] for m in view if str(m["content"]).startswith("[Compacted]")), "")


def users_in(view: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in view if is_request(m) and not str(m["content"]).startswith("[Compacted]")]


def drive(
    c: Compactor, turns: int, corrections: dict[int, tuple[str | None, str]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """An agent loop over a synthetic session with the user's corrections typed in between;
    returns the final view and the user's messages in the order typed."""
    workload = synthetic_session(turns, seed=4)
    typed = [user(REQUEST)]
    messages: list[dict[str, Any]] = list(typed)
    latest = REQUEST
    for t, turn in enumerate(workload.turns):
        if t in corrections:
            question, answer = corrections[t]
            messages += [assistant(question)] if question else []
            typed.append(user(answer))
            messages.append(typed[-1])
            latest = answer
        messages = c.prepare(messages, latest)
        assert check(messages) == []
        # Every message the user typed so far is in view, verbatim and in order.
        assert users_in(messages) == typed
        messages = [*messages, turn.assistant, turn.results]
    return c.prepare(messages, latest), typed


@pytest.mark.parametrize("limit", [6_000, 60_000])
def test_every_user_message_stays_verbatim_in_order_through_a_long_session(limit: int) -> None:
    c, _ = compactor(limit)
    view, typed = drive(c, 200, CORRECTIONS)
    assert users_in(view) == typed
    assert len(typed) == 8
    assert sum(e.stage == "summarize" for e in c.events) >= 1  # the turns around them went


def test_the_assistant_question_a_user_answered_stays_just_before_the_answer() -> None:
    c, _ = compactor(6_000)
    view, _ = drive(c, 120, CORRECTIONS)
    at = view.index(user("The hand-written one."))
    assert view[at - 1] == assistant("Should I use the regex tokenizer or the hand-written one?")
    at = view.index(user("No, 3.11 and later only."))
    assert view[at - 1] == assistant("Is Python 3.9 still supported?")


def test_a_long_assistant_text_is_left_to_the_summary_not_pinned() -> None:
    c, _ = compactor(6_000, answered_chars=40)
    view, _ = drive(c, 120, CORRECTIONS)
    at = view.index(user("The hand-written one."))
    assert view[at - 1]["role"] == "user"  # the 58-character question is not pinned
    at = view.index(user("No, 3.11 and later only."))
    assert view[at - 1] == assistant("Is Python 3.9 still supported?")


LONG = {
    t: (None, f"Correction {i}: " + " ".join(f"rule{i}-{k}" for k in range(40)) + ".")
    for i, t in enumerate(range(10, 150, 14))
}


def test_past_the_budget_the_oldest_fold_into_the_summary_which_names_them() -> None:
    c, store = compactor(8_000, user_words_share=0.08)
    view, typed = drive_folding(c, 160)
    state = c.engine.session.state  # type: ignore[attr-defined]
    kept = users_in(view)
    budget = 0.08 * 8_000 / state.ratio
    pinned = [seq for seq in state.pinned.pins if seq != state.first_request]
    used = sum(c.tokens.count(state.msgs[seq]) for seq in pinned)
    # Within the budget, and as full as it can be: the newest folded message did not fit.
    assert len(pinned) >= 2 and used <= budget
    # The first request and the newest messages stay; the oldest fold, and are named.
    assert kept[0] == typed[0] and kept[-1] == typed[-1]
    folded = typed[1 : len(typed) - len(kept) + 1]
    assert folded and kept[1:] == typed[len(folded) + 1 :]
    assert used + c.tokens.count(folded[-1]) > budget
    names = re.findall(r"message (\d+) in (\S+?)[;\n]", summary_of(view))
    assert len(names) == len(folded)
    for (_, path), message in zip(names, folded, strict=True):
        archived = [json.loads(line) for line in store.read_text(path).splitlines()]
        assert message in archived


def drive_folding(c: Compactor, turns: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    workload = synthetic_session(turns, seed=5)
    typed = [user(REQUEST)]
    messages: list[dict[str, Any]] = list(typed)
    for t, turn in enumerate(workload.turns):
        if t in LONG:
            typed.append(user(LONG[t][1]))
            messages.append(typed[-1])
        messages = c.prepare(messages, str(typed[-1]["content"]))
        assert check(messages) == []
        assert users_in(messages)[-1] == typed[-1] and users_in(messages)[0] == typed[0]
        messages = [*messages, turn.assistant, turn.results]
    return c.prepare(messages, str(typed[-1]["content"])), typed


def test_the_newest_user_message_stays_even_alone_over_the_budget() -> None:
    c, _ = compactor(8_000, user_words_share=0.01)
    view, typed = drive_folding(c, 120)
    state = c.engine.session.state  # type: ignore[attr-defined]
    # Of the messages before the kept turns, only the first request and the newest remain.
    assert users_in(state.prefix) == [typed[0], typed[-1]]
    assert typed[-1] in view and "folded into the summary" in summary_of(view)


def test_a_thinking_turn_too_long_to_keep_is_closed_after_the_pinned_request() -> None:
    c, _ = compactor(4_000)
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "sig"}
    history: list[dict[str, Any]] = [user("t"), assistant("Which file first?"), user("parser.py")]
    for i in range(30):
        use = {"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {"command": "ls"}}
        opener = [thinking] if i == 0 else []
        history += [
            {"role": "assistant", "content": [*opener, use]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"t{i}", "content": "x" * 1_500}
                ],
            },
        ]
    view = c.compact_history(history, "parser.py")
    assert check(view) == [] and api_rules.violation_text(thinking_request(view)) is None
    latest = max(i for i, m in enumerate(view) if m == user("parser.py"))
    assert view[latest - 1] == assistant("Which file first?")
    # The 30-step turn (~12,000 tokens) cannot stay in a 4,000-token window from its thinking
    # block: the summary closes it and the newest step rides along after the request.
    assert view[latest + 1 :] and all(m["role"] == "user" for m in view[latest + 1 :])
    assert '"t29"' not in json.dumps(view[-1]) and "[tool call bash t29]" in view[-1]["content"]


@given(histories(max_turns=40), st.sampled_from([3_000, 12_500]))
def test_every_user_message_is_in_view_or_named_by_the_summary(
    messages: list[dict[str, Any]], limit: int
) -> None:
    c, _ = compactor(limit, user_words_share=0.05)
    view: list[dict[str, Any]] = []
    fed = 0
    cuts = [i for i, m in enumerate(messages) if m["role"] == "assistant"] + [len(messages)]
    for cut in cuts:
        view = c.prepare([*view, *messages[fed:cut]], "r")
        fed = cut
        assert check(view) == []
    typed = [i for i, m in enumerate(messages) if is_request(m)]
    summary = summary_of(view)
    named = {int(n) for n in re.findall(r"message (\d+) in ", summary)}
    more = re.search(r"(\d+) earlier ones", summary)
    unnamed = int(more.group(1)) if more else 0
    expected = [i for i in typed if i not in named][unnamed:]
    assert users_in(view) == [messages[i] for i in expected]
    assert named <= set(typed)
