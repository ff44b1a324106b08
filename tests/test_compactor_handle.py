"""A compactor is a live handle on one session: it is not pickled, and the error says how to
continue its session in another process."""

from __future__ import annotations

import copy
import pickle

import pytest

from context_compact import Compactor, MemoryStore, Policy


def test_pickling_a_compactor_says_it_is_a_live_session_and_how_to_share_it() -> None:
    compactor = Compactor(Policy.default(), MemoryStore())
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        with pytest.raises(TypeError, match=r"live handle on one session") as error:
            pickle.dumps(compactor, protocol)
        message = str(error.value)
        assert "Compactor(policy, store, session=compactor.session_id)" in message
        assert "PostgresStore" in message and "\n" not in message
    with pytest.raises(TypeError, match=r"live handle"):
        copy.deepcopy(compactor)
