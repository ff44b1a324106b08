"""Conversation keys are told apart by value and by type: ``7``, ``7.0``, ``True`` and ``"7"``
are four tenants, a key never opens the session of another key's hash form, a ``str`` key keeps
the session id it always had, and a key that names no conversation is refused in one line."""

from __future__ import annotations

import hashlib
import math
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_compact import MemoryStore, Policy
from context_compact.errors import ConfigError
from context_compact.integrations import Conversations
from context_compact.integrations.conversations import compactor_for

PREFIX = "conv"


def conversations() -> Conversations:
    return Conversations(Policy.default(context_limit=12_000), MemoryStore())


def same_key(a: Any, b: Any) -> bool:
    """The test's own rule: the same type, and the same value (a float by its bits' text, so
    NaN is itself and -0.0 is not 0.0; a tuple item by item)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(map(same_key, a, b))
    if isinstance(a, float):
        return a.hex() == b.hex()
    return bool(a == b)


HEX32 = st.text("0123456789abcdefABCDEF", min_size=32, max_size=32)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(-3, 3).map(float),
    st.floats(allow_nan=True),
    st.text(max_size=40),
    st.sampled_from(["7", "7.0", "True", "None", "1", "0", "", "b'7'", "(7,)"]),
    HEX32,
    st.binary(max_size=12),
    st.uuids(),
    st.uuids().map(str),
    st.uuids().map(lambda u: u.hex),
)
KEYS = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3).map(tuple), max_leaves=6)


def hash_forms(chats: Conversations, key: Any) -> list[str]:
    """The digits of ``key``'s session id, as keys: what a forger who saw the id would pass."""
    digits = chats.session_id(key).removeprefix(f"{PREFIX}-")
    return [digits, digits.upper(), digits.lower()]


def look_alikes(key: Any) -> list[Any]:
    """Keys that equal ``key`` in Python or print as it does: its text, its repr, and for a
    number the same value as a bool, an int and a float."""
    alikes: list[Any] = [str(key), repr(key), (key,)]
    if isinstance(key, int | float) and math.isfinite(key):
        alikes += [bool(key), int(key), float(key)]
    return alikes


@given(KEYS, st.data())
def test_two_keys_that_differ_by_value_or_type_never_name_one_session(
    a: Any, data: st.DataObject
) -> None:
    b = data.draw(st.sampled_from(look_alikes(a)) | KEYS)
    chats = conversations()
    assert chats.session_id(a) == chats.session_id(a)
    if not same_key(a, b):
        assert chats.session_id(a) != chats.session_id(b)
    for forged in hash_forms(chats, b):
        if not same_key(forged, b):
            assert chats.session_id(forged) != chats.session_id(b)


@given(KEYS, st.data())
def test_one_compactor_routes_keys_that_differ_by_value_or_type_to_different_sessions(
    a: Any, data: st.DataObject
) -> None:
    b = data.draw(st.sampled_from(look_alikes(a)) | KEYS)
    home = conversations().get("home")
    assert compactor_for(home, "the first conversation") is home
    first, second = compactor_for(home, a), compactor_for(home, b)
    assert (second is first) == same_key(a, b)
    assert compactor_for(home, b) is second and compactor_for(home, a) is first


@pytest.mark.parametrize("keys", [(1, True, 1.0, "1"), (0, False, 0.0, "0"), (None, "None")])
def test_the_compactor_given_is_only_its_first_keys_whatever_equals_that_key(
    keys: tuple[Any, ...],
) -> None:
    home = conversations().get("home")
    routed = [compactor_for(home, key) for key in keys]
    assert routed[0] is home
    assert len({id(c) for c in routed}) == len({c.session_id for c in routed}) == len(keys)


@pytest.mark.parametrize(
    "keys",
    [
        (7, 7.0, True, "7"),
        (1, 1.0, True, "1", "True"),
        (0, 0.0, -0.0, False, "0", "False", b"0"),
        ((7,), (7.0,), ("7",), "(7,)"),
        (None, "None"),
        (uuid.UUID(int=7), str(uuid.UUID(int=7)), uuid.UUID(int=7).hex),
    ],
)
def test_keys_equal_in_python_but_of_other_types_are_other_conversations(
    keys: tuple[Any, ...],
) -> None:
    chats = conversations()
    assert len({chats.session_id(key) for key in keys}) == len(keys)
    opened = [chats.get(key) for key in keys if key is not None]
    for n, compactor in enumerate(opened):
        compactor.prepare([{"role": "user", "content": f"word-{n}-{n}"}], f"word-{n}-{n}")
    for n, compactor in enumerate(opened):
        for m in range(len(opened)):
            assert compactor.recall(f"word-{m}-{m}").hits == (m == n)


def test_a_str_key_keeps_the_session_id_it_had() -> None:
    chats = conversations()
    assert chats.session_id("thread-42") == "conv-thread-42"
    assert chats.session_id("") == "conv-"
    for key in ["user/42 ünïcode", "0" * 32, "A" * 32, "\udcff", "ключ", " "]:
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        assert chats.session_id(key) == f"conv-{digest[:32]}"


@pytest.mark.parametrize("key", [None, ""])
def test_a_key_that_names_no_conversation_is_refused_in_one_line(key: Any) -> None:
    chats = conversations()
    with pytest.raises(ConfigError) as refused:
        chats.get(key)
    message = str(refused.value)
    assert "\n" not in message and "Conversations.get: key" in message and repr(key) in message
    assert len(chats) == 0 and list(chats.store.list_sessions()) == []


@pytest.mark.parametrize("key", [object(), [7], {"a": 1}, (1, [2]), 1j])
def test_a_key_without_a_value_every_process_shares_is_refused_in_one_line(key: Any) -> None:
    chats = conversations()
    with pytest.raises(ConfigError) as refused:
        chats.get(key)
    message = str(refused.value)
    assert "\n" not in message and message.startswith("conversation key ")
    assert list(chats.store.list_sessions()) == []


def test_routing_takes_none_and_the_empty_key_as_conversations_of_their_own() -> None:
    home = conversations().get("home")
    assert compactor_for(home, None) is home
    others = [compactor_for(home, key) for key in ("", "None", 0, False)]
    ids = {c.session_id for c in [home, *others]}
    assert len(ids) == 5
    assert compactor_for(home, None) is home and compactor_for(home, "") is others[0]


def test_a_nan_key_is_the_same_conversation_every_time() -> None:
    chats = conversations()
    assert chats.get(math.nan) is chats.get(float("nan"))
