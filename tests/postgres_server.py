"""The PostgreSQL server the tests use: ``CC_TEST_POSTGRES_URL`` (default: 127.0.0.1:5432/test).

Where none answers (a fresh machine), tests that need it are skipped, saying why; with
``CC_REQUIRE_POSTGRES=1`` (CI) they fail instead. Each test gets a schema of its own, dropped
after it.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import pytest

URL = os.environ.get("CC_TEST_POSTGRES_URL", "postgresql://127.0.0.1:5432/test")


@functools.cache
def unavailable() -> str | None:
    """Why the server cannot be used here, or None."""
    try:
        import psycopg
        import psycopg_pool  # noqa: F401
    except ImportError:
        return (
            "psycopg 3 and psycopg-pool are not installed (pip install 'context-compact[postgres]')"
        )
    try:
        with psycopg.connect(URL, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as error:
        return f"no PostgreSQL server answers at {URL} ({str(error).strip()[:200]})"
    return None


def require() -> str:
    """The server's URL; skips the test where there is none (fails under CC_REQUIRE_POSTGRES=1)."""
    reason = unavailable()
    if reason is not None:
        if os.environ.get("CC_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"CC_REQUIRE_POSTGRES=1 but {reason}")
        pytest.skip(reason)
    return URL


def drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def query(schema: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    """Run ``sql`` with ``schema`` first on the search path (a test playing another worker, or
    altering the rows): its rows, [] for a statement that returns none."""
    import psycopg

    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute(f"SET search_path TO {schema}")
        cursor = conn.execute(sql, args)
        return cursor.fetchall() if cursor.description else []
