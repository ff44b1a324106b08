from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from store_helpers import DURABLE_KINDS, KINDS, open_store, schema_of

from context_compact.store import Store
from postgres_server import drop_schema, require


@pytest.fixture(autouse=True)
def postgres_schema(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[None]:
    """A test of the postgres kind needs the server (skips or fails without it) and gets a
    schema of its own, dropped afterwards."""
    params = getattr(request.node, "callspec", None)
    kinds = set() if params is None else {params.params.get(k) for k in ("kind", "durable_kind")}
    if "postgres" not in kinds:
        yield
        return
    require()
    try:
        yield
    finally:
        drop_schema(schema_of(tmp_path))


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
