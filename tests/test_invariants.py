from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_compact import Compactor, InvalidHistory, MemoryStore, Policy, check
from context_compact.invariants import check_appended
from histories import assistant, call, pair, results, user


def rules(messages: Any) -> list[tuple[int, str]]:
    return [(v.index, v.rule) for v in check(messages)]


def test_a_valid_history_has_no_violations() -> None:
    assert check([user("t"), *pair("a", "r"), assistant("done")]) == []


def test_an_unanswered_tool_use_in_the_last_message_is_allowed() -> None:
    assert check([user("t"), call("a")]) == []


def test_consecutive_same_role_messages_are_allowed() -> None:
    assert check([user("t"), user("more"), assistant("a"), assistant("b")]) == []


def test_a_result_whose_use_is_not_in_the_previous_message_is_an_orphan() -> None:
    history = [user("t"), call("a"), results(("a", "r")), results(("a", "again"))]
    assert (3, "orphan_result") in rules(history)


def test_a_result_after_a_user_message_is_an_orphan() -> None:
    assert rules([user("t"), results(("x", "r"))]) == [(1, "orphan_result")]


def test_a_tool_use_not_answered_in_the_next_message_is_reported() -> None:
    assert rules([user("t"), call("a", "b"), results(("a", "r"))]) == [(1, "unanswered_use")]


def test_duplicate_tool_use_ids_are_reported() -> None:
    history = [user("t"), *pair("a", "r"), *pair("a", "r")]
    assert (3, "duplicate_id") in rules(history)


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        ("just a string", "expected a dict"),
        ({"role": "system", "content": "x"}, "unknown role"),
        ({"role": "user", "content": 3}, "content must be a str or a list"),
        ({"role": "user"}, "content must be a str or a list"),
    ],
)
def test_malformed_messages_are_reported_with_their_index(message: Any, fragment: str) -> None:
    (violation,) = check([user("t"), message])
    assert (violation.index, violation.rule) == (1, "malformed")
    assert fragment in violation.detail


def test_a_history_that_is_not_a_list_is_malformed() -> None:
    assert rules({"role": "user"}) == [(-1, "malformed")]


@pytest.mark.parametrize("method", ["prepare", "reactive_compact", "compact_history"])
def test_bad_input_raises_invalid_history_naming_the_index(method: str) -> None:
    compactor = Compactor(Policy.seed(), MemoryStore(), lambda m: "s")
    bad = [user("t"), call("a"), user("no result")]
    with pytest.raises(InvalidHistory, match=r"message 1: unanswered_use") as info:
        getattr(compactor, method)(bad, "t")
    assert info.value.index == 1 and info.value.rule == "unanswered_use"


@pytest.mark.parametrize("method", ["tool_result_budget", "snip_compact", "micro_compact"])
def test_each_stage_refuses_invalid_input(method: str) -> None:
    compactor = Compactor(Policy.seed(), MemoryStore(), lambda m: "s")
    with pytest.raises(InvalidHistory, match="message 1: malformed"):
        getattr(compactor.engine, method)([user("t"), {"role": "tool", "content": "x"}])


def test_invalid_history_is_a_value_error() -> None:
    assert issubclass(InvalidHistory, ValueError)


def test_a_block_that_is_not_a_dict_is_malformed() -> None:
    (violation,) = check([user("t"), {"role": "assistant", "content": ["loose text"]}])
    assert (violation.index, violation.rule) == (1, "malformed")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
MESSAGEISH = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", 3])},
    optional={
        "content": st.one_of(
            st.text(max_size=5),
            st.lists(
                JSON
                | st.fixed_dictionaries(
                    {
                        "type": st.sampled_from(["text", "tool_use", "tool_result"]),
                        "id": st.text(max_size=2),
                        "tool_use_id": st.text(max_size=2),
                        "content": JSON,
                    }
                ),
                max_size=3,
            ),
            JSON,
        )
    },
)


@given(st.lists(MESSAGEISH | JSON, max_size=6) | JSON)
def test_check_and_every_entry_point_never_crash_on_arbitrary_input(messages: Any) -> None:
    violations = check(messages)
    for preset in (Policy.seed(echo=False), Policy.default(context_limit=2_000)):
        compactor = Compactor(preset, MemoryStore(), lambda m: "s")
        try:
            view = compactor.prepare(messages, "r")
        except InvalidHistory:
            assert violations
        else:
            assert not violations and check(view) == []


# Values JSON may or may not hold: every leaf and key type the fast walk tells apart.
ODD_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=3),
    st.binary(max_size=2),
    st.sets(st.integers(), max_size=1),
    st.builds(object),
)
ODD = st.recursive(
    ODD_LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(
            st.one_of(st.text(max_size=2), st.integers(), st.none(), st.booleans()),
            inner,
            max_size=3,
        )
    ),
    max_leaves=12,
)


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


@given(ODD)
def test_the_quick_json_check_passes_exactly_what_the_detailed_walk_passes(value: Any) -> None:
    from context_compact.invariants import _clean, _first_violation

    assert _clean(value, 0) == (_first_violation(value, 0) is None)


@pytest.mark.parametrize("depth", [98, 99, 100, 101])
@pytest.mark.parametrize("leaf", ["text", [], {}, b"x"])
def test_the_quick_json_check_stops_at_the_same_depth_as_the_detailed_walk(
    depth: int, leaf: Any
) -> None:
    from context_compact.invariants import _clean, _first_violation

    value = _nested(depth, leaf)
    assert _clean(value, 0) == (_first_violation(value, 0) is None)


def test_a_none_dict_key_is_reported_as_not_a_string() -> None:
    history = [{"role": "user", "content": [{"type": "text", "text": "hi", None: 1}]}]
    (violation,) = check(history)
    assert violation.rule == "unserializable" and "key None is not a string" in violation.detail


IDS = st.sampled_from(["a", "b", "c", "d"])
APPENDED = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant"]),
        "content": st.lists(
            st.fixed_dictionaries({"type": st.just("tool_use"), "id": IDS, "input": ODD})
            | st.fixed_dictionaries(
                {"type": st.just("tool_result"), "tool_use_id": IDS, "content": ODD}
            )
            | st.fixed_dictionaries({"type": st.just("text"), "text": ODD}),
            max_size=3,
        )
        | ODD,
    }
)


@given(st.lists(APPENDED | MESSAGEISH, min_size=1, max_size=4))
def test_checking_what_is_appended_finds_what_checking_the_whole_history_finds(
    new: list[Any],
) -> None:
    # A valid history whose last message waits for its results, then anything appended.
    before = [user("t"), *pair("a", "r"), call("b", "c")]
    whole = {(v.index - len(before) + 1, v.rule, v.detail) for v in check([*before, *new])}
    appended = check_appended(before[-1], new, {"a", "b", "c"})
    assert {(v.index + 1, v.rule, v.detail) for v in appended} == whole
