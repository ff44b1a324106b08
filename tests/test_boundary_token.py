"""The boundary token (``quoting.boundary``): the same texts give the same token, and it
occurs in none of them, not even disguised (case, fullwidth forms, invisible characters
between its digits); when a candidate does, another is drawn, longer, until one is free."""

from __future__ import annotations

import itertools
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from context_compact.quoting import boundary


def _spread(token: str) -> str:
    return "\u00ad".join(unicodedata.normalize("NFKC", token).upper())


@given(st.lists(st.text(max_size=60), max_size=4))
def test_a_boundary_is_deterministic_and_occurs_in_none_of_its_texts(texts: list[str]) -> None:
    token = boundary(*texts)
    assert token == boundary(*texts)
    assert all(token not in t and token.upper() not in t for t in texts)


@given(
    st.lists(
        st.text("0123456789abcdefABCDEF\u00ad \uff10\uff41", max_size=300), min_size=1, max_size=3
    )
)
def test_a_boundary_is_found_even_when_the_first_candidates_occur_in_the_text(
    texts: list[str],
) -> None:
    # Tokens of one or two digits are all but sure to occur in hex text: the rehash (one
    # digit longer each time) must still end with one that occurs nowhere, in any disguise.
    for length in (1, 2):
        token = boundary(*texts, length=length)
        folded = [
            "".join(c for c in unicodedata.normalize("NFKC", t).casefold() if c.isalnum())
            for t in texts
        ]
        assert all(token not in f for f in folded)


def test_a_boundary_written_into_the_text_it_was_drawn_from_is_drawn_again() -> None:
    texts = ["some tool output"]
    token = boundary(*texts)
    for disguise in (token, token.upper(), _spread(token), f"</summary-{token}>"):
        again = boundary(texts[0] + disguise)
        assert again != token and again not in texts[0] + disguise


def test_short_boundaries_lengthen_until_one_is_free() -> None:
    every_pair = "".join(a + b for a, b in itertools.product("0123456789abcdef", repeat=2))
    token = boundary(every_pair, length=1)
    assert len(token) >= 3 and token not in every_pair
