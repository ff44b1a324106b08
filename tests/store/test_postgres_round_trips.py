"""PostgresStore's append: one transaction in one round trip for the writer holding the lease
(the server checks what it knows), in two for one that must check first (the session's row
locked and checked, then the batch's rows with the COMMIT); a refused one leaves its
connection outside any transaction."""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from store_helpers import turn, whole_turns

from context_compact.store import SessionLocked
from context_compact.store.postgres import PostgresStore
from postgres_server import require

psycopg = pytest.importorskip("psycopg", reason="pip install 'context-compact[postgres]'")


def traced(store: PostgresStore, fd: int) -> list[Any]:
    """Every connection the store takes from its pool from now on writes libpq's trace of
    the protocol to ``fd``; the transaction status of each as the store gives it back to the
    pool (before the pool resets it), in order."""
    seen: list[Any] = []
    original = store.pg.pool.connection

    @contextmanager
    def connection(*args: Any, **kwargs: Any) -> Iterator[Any]:
        with original(*args, **kwargs) as conn:
            conn.pgconn.trace(fd)
            try:
                yield conn
            finally:
                conn.pgconn.untrace()
                seen.append(conn.info.transaction_status)

    store.pg.pool.connection = connection  # type: ignore[method-assign]
    return seen


def round_trips(trace: str) -> int:
    """Times the client sent and then waited for the server's answer."""
    way = [line.split("\t")[1] for line in trace.splitlines() if line.count("\t") >= 3]
    return sum(1 for a, b in itertools.pairwise(way) if a == "F" and b == "B")


def trips_of(store: PostgresStore, act: Callable[[], None]) -> int:
    with tempfile.TemporaryFile("w+") as out:
        traced(store, out.fileno())
        act()
        out.flush()
        os.fsync(out.fileno())
        out.seek(0)
        return round_trips(out.read())


def test_an_append_of_the_lease_holder_is_one_round_trip(
    worker: Callable[[str], PostgresStore],
) -> None:
    store = worker("a")
    session = store.create_session({})
    store.append(session, turn(0))  # the lease taken, statements prepared

    def five() -> None:
        for n in range(1, 6):
            store.append(session, turn(n))

    assert trips_of(store, five) == 5
    assert whole_turns(list(store.records(session))) == 6


def test_an_append_that_must_check_first_is_two_round_trips(
    worker: Callable[[str], PostgresStore],
) -> None:
    first = worker("a")
    session = first.create_session({})
    for n in range(6):  # the statements prepared on the pool's connection
        first.append(session, turn(n))
    first.close()
    second = worker("b")
    second.records(session)  # it knows the journal, but does not hold the lease yet
    assert trips_of(second, lambda: second.append(session, turn(6))) == 2
    assert trips_of(second, lambda: second.append(session, turn(7))) == 1
    assert whole_turns(list(second.records(session))) == 8


def test_a_refused_append_leaves_its_connection_outside_a_transaction(
    worker: Callable[[str], PostgresStore],
) -> None:
    first, second = worker("a"), worker("b")
    session = first.create_session({})
    first.append(session, turn(0))
    # As if the first writer were alive on another machine.
    with psycopg.connect(require(), autocommit=True) as conn:
        conn.execute(f"UPDATE {first.schema}.writers SET host = 'worker-7', pid = 4242")
    second.records(session)
    with tempfile.TemporaryFile("w+") as out:
        seen = traced(second, out.fileno())
        with pytest.raises(SessionLocked):
            second.append(session, turn(1))
    assert seen and set(seen) == {psycopg.pq.TransactionStatus.IDLE}
    assert whole_turns(list(second.records(session))) == 1  # nothing of it got in


def test_reading_a_session_is_three_round_trips_whatever_its_length(
    worker: Callable[[str], PostgresStore],
) -> None:
    writer = worker("a")
    session = writer.create_session({})
    for n in range(6):
        writer.append(session, turn(n))
    reader = worker("b")
    for _ in range(6):  # the statements prepared on the pool's connection
        list(reader.records(session))
    assert trips_of(reader, lambda: list(reader.records(session))) == 3
    assert trips_of(reader, lambda: list(reader.records_from(session, 4))) == 3
