"""Long strings moved to blobs come back exactly, whatever dicts look like placeholders."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from context_compact.store import SqliteStore
from context_compact.store.blobrefs import BLOB, ESCAPE, externalize, references, restore

HEX = st.text("0123456789abcdef", min_size=0, max_size=64)
KEYS = st.one_of(st.sampled_from([BLOB, ESCAPE, "$", "$blob ", "kind", "content"]), st.text())
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(),  # lone surrogates included
    HEX,
    st.builds(lambda c, n: c * n, st.text(min_size=1, max_size=3), st.integers(300, 700)),
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    placeholder_like = st.builds(lambda k, v: {k: v}, st.sampled_from([BLOB, ESCAPE]), children)
    return st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(KEYS, children, max_size=4),
        placeholder_like,
        st.builds(lambda h: {BLOB: h}, HEX),
        st.builds(lambda v: {ESCAPE: {ESCAPE: v}}, children),
    )


JSON = st.recursive(SCALARS, _containers, max_leaves=25)


@given(JSON, st.integers(1, 8))
def test_a_value_with_its_long_strings_externalized_is_restored_equal(
    value: Any, min_chars: int
) -> None:
    sink: dict[str, bytes] = {}
    stored = externalize(value, sink, min_chars)
    assert restore(stored, sink.__getitem__) == value
    assert references(stored, set()) == set(sink)


@given(JSON)
def test_the_sqlite_store_gives_back_adversarial_records_equal(value: Any) -> None:
    record = {"kind": "message", "id": "m", "parent": None, "message": value}
    other = {"kind": "edit", BLOB: value}
    with tempfile.TemporaryDirectory() as where:
        store = SqliteStore(Path(where) / "s.db")
        try:
            session = store.create_session({})
            store.append(session, [record, other, {BLOB: "0" * 64, "kind": "x"}])
            assert list(store.records(session)) == [record, other, {BLOB: "0" * 64, "kind": "x"}]
        finally:
            store.close()


def test_a_placeholder_shaped_dict_in_the_input_is_escaped() -> None:
    sink: dict[str, bytes] = {}
    assert externalize({BLOB: "ab"}, sink) == {ESCAPE: {BLOB: "ab"}}
    assert externalize({ESCAPE: 1}, sink) == {ESCAPE: {ESCAPE: 1}}
    assert externalize({BLOB: "ab", "x": 1}, sink) == {BLOB: "ab", "x": 1}
    assert sink == {}
