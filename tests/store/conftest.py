from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from store_helpers import DURABLE_KINDS, KINDS, open_store, schema_of

from context_compact.store import Store
from context_compact.store.postgres import PostgresStore
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


@pytest.fixture
def schema(tmp_path: Path) -> Iterator[str]:
    """The test's own PostgreSQL schema (the server required: skips or fails without it),
    dropped afterwards."""
    require()
    yield schema_of(tmp_path)
    drop_schema(schema_of(tmp_path))


@pytest.fixture
def worker(schema: str, tmp_path: Path) -> Iterator[Callable[..., PostgresStore]]:
    """Opens PostgresStores on the test's schema, each as a worker with its own root
    (``tmp_path / name``) would; closes them all afterwards, before the schema is dropped."""
    stores: list[PostgresStore] = []

    def open_(name: str = "a", **options: Any) -> PostgresStore:
        stores.append(PostgresStore(require(), root=tmp_path / name, schema=schema, **options))
        return stores[-1]

    yield open_
    for store in stores:
        store.close()
