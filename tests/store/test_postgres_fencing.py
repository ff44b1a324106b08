"""PostgresStore's fencing under contention: an append that waits for the session's row while
another worker takes the lease over sees the new token once it gets the row, and is refused."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from store_helpers import turn, whole_turns

from context_compact.store import SessionLocked
from context_compact.store.postgres import PostgresStore
from postgres_server import require

psycopg = pytest.importorskip("psycopg", reason="pip install 'context-compact[postgres]'")

_TAKE_OVER = (
    "UPDATE {schema}.writers SET token = token + 1, host = 'worker-7', pid = 4242, "
    "heartbeat = extract(epoch FROM clock_timestamp()) WHERE session = %s"
)


def wait_until_blocked_by(pid: int) -> None:
    """Until some backend waits for a lock the backend ``pid`` holds (10 s at most)."""
    with psycopg.connect(require(), autocommit=True) as watcher:
        for _ in range(1_000):
            found = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
                (pid,),
            ).fetchone()
            if found and found[0]:
                return
            time.sleep(0.01)
    raise AssertionError("the append never waited for the session's row")


def test_an_append_waiting_for_the_session_while_it_is_taken_over_is_refused(
    worker: Callable[[str], PostgresStore],
) -> None:
    store = worker("a")
    session = store.create_session({})
    store.append(session, turn(0))
    outcome: list[BaseException | None] = []

    def append() -> None:
        try:
            store.append(session, turn(1))
            outcome.append(None)
        except BaseException as error:
            outcome.append(error)

    with psycopg.connect(require(), autocommit=True) as other:
        with other.transaction():
            # Another worker takes the session over (as after this one's heartbeat went
            # stale): it holds the session's row while it writes its new token.
            other.execute(
                f"SELECT 1 FROM {store.schema}.sessions WHERE id = %s FOR UPDATE", (session,)
            )
            other.execute(_TAKE_OVER.format(schema=store.schema), (session,))
            thread = threading.Thread(target=append)
            thread.start()
            wait_until_blocked_by(other.info.backend_pid)
        thread.join(timeout=30)
    assert len(outcome) == 1 and isinstance(outcome[0], SessionLocked), outcome
    assert "lost its lease" in str(outcome[0])
    assert whole_turns(list(store.records(session))) == 1  # nothing of the turn got in
