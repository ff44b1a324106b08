"""The cadence rules (``session/cadence.py``): the recent turns a clearing keeps, and when a
summary rides on a clearing."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from context_compact import Compactor, MemoryStore, Policy, check
from context_compact.session import cadence
from context_compact.testing.fakes import BenchSummarizer
from histories import body, pair, user

LIMIT = 10_000


def compactor(**overrides: Any) -> Compactor:
    policy = Policy.default(**{"context_limit": LIMIT, **overrides})
    return Compactor(policy, MemoryStore(), BenchSummarizer(), session="s")


def steps(sizes: list[int]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [user("fix the parser")]
    for n, size in enumerate(sizes):
        out += pair(f"toolu_{n:04d}", body(f"r{n}", size))
    return out


def cleared(view: list[dict[str, Any]]) -> set[str]:
    return {
        b["tool_use_id"]
        for m in view
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result" and b["content"].startswith("[Tool result cleared")
    }


def test_recent_turns_that_fit_under_the_low_water_mark_keep_their_results() -> None:
    c = compactor()
    c.prepare(steps([400, 400, 400, 400]), "fix the parser")
    state, policy = c.engine.session.state, c.engine.session.policy
    starts = state.turn_starts()
    # Three small turns fit under 12% of 10,000 tokens: the oldest of them is where keeping starts.
    assert cadence.recent_from(state, policy, 3) == starts[-3]


def test_a_large_result_just_read_does_not_hold_the_clearing_above_the_low_water_mark() -> None:
    c = compactor()
    # The turn before the newest read ~2,000 tokens: over 12% of the limit with the newest.
    c.prepare(steps([400, 400, 8_000, 400]), "fix the parser")
    state, policy = c.engine.session.state, c.engine.session.policy
    assert cadence.recent_from(state, policy, 3) == state.turn_starts()[-1]


def test_the_newest_turn_is_kept_whatever_its_size_and_nothing_unseen_is_ever_offered() -> None:
    c = compactor()
    c.prepare(steps([400, 400, 30_000]), "fix the parser")
    state, policy = c.engine.session.state, c.engine.session.policy
    for keep in (1, 2, 3, 5):
        start = cadence.recent_from(state, policy, keep)
        assert start <= state.turn_starts()[-1]
        assert start <= state.last_assistant() + 1


def test_no_turn_to_keep_leaves_the_start_of_the_first_turn_with_keep_zero() -> None:
    c = compactor()
    c.prepare(steps([400, 400, 400]), "fix the parser")
    state, policy = c.engine.session.state, c.engine.session.policy
    assert cadence.recent_from(state, policy, 0) == state.turn_starts()[0]


def test_a_clearing_takes_the_large_result_of_a_recent_turn_and_names_its_copy() -> None:
    c = compactor(large_result_share=0.3)  # the large result stays whole until cleared
    history = steps([1_500] * 20 + [7_000, 400])
    view = c.prepare(history, "fix the parser")
    assert check(view) == []
    assert "toolu_0020" in cleared(view)  # the large result of the turn before the newest
    assert "toolu_0021" not in cleared(view)  # the newest: unseen, kept
    assert c.recall("<r20>").hits == 1
    assert [e.stage for e in c.events if e.stage != "persist_new_results"] == ["clear_old_results"]
    assert c.engine.session.measure() < 0.5 * LIMIT


def test_a_summary_comes_along_only_when_the_clearing_leaves_too_little_of_its_room() -> None:
    summary_room = 10_000.0
    share = cadence.SUMMARY_PAYOFF * summary_room
    assert cadence.summary_due(share - 1, summary_room)
    assert not cadence.summary_due(share, summary_room)


@given(st.floats(0, 20_000), st.floats(0, 20_000), st.floats(0, 20_000), st.floats(0, 20_000))
def test_more_room_never_makes_a_summary_more_due_nor_a_better_summary_less(
    room: float, more: float, summary_room: float, better: float
) -> None:
    if cadence.summary_due(room + more, summary_room):
        assert cadence.summary_due(room, summary_room)
    if cadence.summary_due(room, summary_room):
        assert cadence.summary_due(room, summary_room + better)
