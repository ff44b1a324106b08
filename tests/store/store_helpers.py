"""Helpers shared by the store tests and the child processes they start (spawn imports this).

Kept free of pytest and hypothesis so a spawned child starts fast.
"""

from __future__ import annotations

import hashlib
import multiprocessing.synchronize
import os
import time
from pathlib import Path
from typing import Any

from context_compact.store import FileStore, MemoryStore, SqliteStore, Store

KINDS = ["memory", "files", "sqlite", "postgres"]
DURABLE_KINDS = ["files", "sqlite", "postgres"]
POSTGRES_URL = os.environ.get("CC_TEST_POSTGRES_URL", "postgresql://127.0.0.1:5432/test")


def schema_of(where: Path) -> str:
    """The PostgreSQL schema of the tests run in ``where`` (one per test: isolated, and
    the same in the processes a test starts)."""
    return "cc_test_" + hashlib.sha256(str(where).encode()).hexdigest()[:16]


def open_store(kind: str, where: Path) -> Store:
    if kind == "memory":
        return MemoryStore(str(where))
    if kind == "files":
        return FileStore(where)
    if kind == "sqlite":
        return SqliteStore(where / "store.db")
    if kind == "postgres":
        from context_compact.store.postgres import PostgresStore

        return PostgresStore(POSTGRES_URL, root=where, schema=schema_of(where))
    raise ValueError(kind)


def big_text(n: int, size: int = 5000) -> str:
    # Over the 1 KiB blob threshold, different for each n, with a lone surrogate inside.
    return f"result {n} \ud800 " + "x" * size + f" end {n}"


def turn(n: int, size: int = 5000) -> list[dict[str, Any]]:
    """The three records of one turn, all carrying the batch number ``n``."""
    return [
        {
            "kind": "message",
            "id": f"m{n}",
            "parent": f"m{n - 1}" if n else None,
            "n": n,
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "content": big_text(n, size)}],
            },
        },
        {"kind": "edit", "n": n, "op": "clear", "at": [n, 0]},
        {"kind": "event", "n": n, "stage": "persist"},
    ]


def whole_turns(records: list[dict[str, Any]], size: int = 5000) -> int:
    """The number of turns in ``records``; AssertionError unless they are whole and in order."""
    assert len(records) % 3 == 0, f"{len(records)} records: a torn batch"
    for n in range(len(records) // 3):
        assert records[3 * n : 3 * n + 3] == turn(n, size), f"turn {n} differs"
    return len(records) // 3


def append_turns(
    kind: str,
    where: str,
    session: str,
    count: int,
    start: multiprocessing.synchronize.Barrier | None = None,
    size: int = 5000,
    ready: multiprocessing.synchronize.Event | None = None,
    pause: float = 0.0,
) -> None:
    """Child process: append ``count`` turns (forever when negative) to ``session``,
    ``pause`` seconds apart."""
    store = open_store(kind, Path(where))
    try:
        if ready is not None:
            ready.set()
        if start is not None:
            start.wait(timeout=30)
        n = 0
        while n != count:
            store.append(session, turn(n, size))
            n += 1
            if pause:
                time.sleep(pause)
    finally:
        store.close()


def hold_session(
    kind: str,
    where: str,
    session: str,
    ready: multiprocessing.synchronize.Event,
    release: multiprocessing.synchronize.Event,
) -> None:
    """Child process: write one turn to ``session``, then stay its writer until ``release``."""
    store = open_store(kind, Path(where))
    try:
        store.append(session, turn(len(list(store.records(session))) // 3))
        ready.set()
        release.wait(timeout=60)
    finally:
        store.close()


def claim_session(
    kind: str,
    where: str,
    session: str,
    ready: multiprocessing.synchronize.Event,
    release: multiprocessing.synchronize.Event,
) -> None:
    """Child process: be ``session``'s writer (without writing) until ``release``."""
    store = open_store(kind, Path(where))
    try:
        store.claim(session)
        ready.set()
        release.wait(timeout=60)
    finally:
        store.close()
