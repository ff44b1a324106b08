from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from store_helpers import DURABLE_KINDS, KINDS, open_store

from context_compact.store import Store


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=DURABLE_KINDS)
def durable_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[Callable[[str], Store]]:
    """Opens stores of a kind on ``tmp_path`` (again: a restart); closes them all afterwards."""
    stores: list[Store] = []

    def open_(kind: str) -> Store:
        stores.append(open_store(kind, tmp_path))
        return stores[-1]

    yield open_
    for store in stores:
        store.close()


@pytest.fixture
def store(kind: str, opened: Callable[[str], Store]) -> Store:
    return opened(kind)
