"""The commit point: the engine's state never runs ahead of the session journal.

An exception at any point of a call's journal append (each line the append runs, in our code
and the store's: every write, every commit, every place a signal can land), of any kind (a
store error, ``SessionLocked``, ``KeyboardInterrupt``, a bug), then the same call retried:
the journal equals the one an unfaulted run wrote, on FileStore, SqliteStore and PostgreSQL,
and a resumed session sends the view the live one sends.
"""

from __future__ import annotations

import errno
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fault_points import Points
from store_helpers import DURABLE_KINDS, open_store

from context_compact import Compactor, Policy
from context_compact.errors import ContextCompactError, SessionLocked
from context_compact.store import Store
from histories import call, results, user

LIMIT = 1_500
ERRORS: dict[str, Callable[[], BaseException]] = {
    "disk_full": lambda: OSError(errno.ENOSPC, "No space left on device"),
    "locked": lambda: SessionLocked("session 's' is being written by process 1 on elsewhere"),
    "ctrl_c": lambda: KeyboardInterrupt(),
    "bug": lambda: RuntimeError("a bug in the store"),
}
FAULTED_CALLS = (0, 1)  # the cold start (it creates the session and summarizes), a turn


def history(turns: int) -> list[list[dict[str, Any]]]:
    """The caller's list before each call: a task, then tool turns of growing results."""
    out, messages = [], [user("Fix the failing test in tests/test_io.py")]
    out.append(list(messages))
    for n in range(turns):
        size = 300 + (n * 977) % 2_500
        messages = [*messages, call(f"t{n}"), results((f"t{n}", f"result {n} " + "z" * size))]
        out.append(list(messages))
    return out


# A cold start that compacts (persist and summary), then two turns of a live session.
CALLS = history(10)[8:]


RUNS = 0


def run(store: Store, index: int = -1, points: Points | None = None) -> tuple[str, list[Any]]:
    """The scenario's calls, each passing the caller's full list; call ``index`` runs under
    ``points`` and, when it fails, is retried once as it was (what our errors tell callers)."""
    global RUNS
    RUNS += 1
    # Ids of one shape: the index file's path (in the summary) is sized the same in every run.
    session = f"s{RUNS:011d}"
    compactor = Compactor(Policy.default(context_limit=LIMIT), store, session=session)
    view: list[Any] = []
    for i, messages in enumerate(CALLS):
        if i == index and points is not None:
            points.arm()
            try:
                view = compactor.prepare(messages, "fix the test")
                continue
            except (ContextCompactError, KeyboardInterrupt, RuntimeError, OSError):
                pass
            finally:
                points.disarm()
        view = compactor.prepare(messages, "fix the test")
    assert compactor.session_id is not None
    return compactor.session_id, view


def named(value: Any, session: str) -> Any:
    """``value`` with the session's id (in the index file's path) as ``SID``."""
    return json.loads(json.dumps(value).replace(session, "SID"))


def comparable(store: Store, session: str) -> list[dict[str, Any]]:
    return list(named(list(store.records(session)), session))


@pytest.mark.parametrize("kind", DURABLE_KINDS)
def test_a_fault_anywhere_in_the_append_then_a_retry_journals_what_an_unfaulted_run_does(
    tmp_path: Path, kind: str
) -> None:
    store = open_store(kind, tmp_path)
    try:
        sid, expected_view = run(store)
        expected_view = named(expected_view, sid)
        expected = comparable(store, sid)
        assert {"message", "edit", "event"} <= {r["kind"] for r in expected}  # it compacts
        assert any(r.get("op") == "summarize" for r in expected)
        tried = divergent = 0
        for index in FAULTED_CALLS:
            counted = Points()
            run(store, index, counted)
            assert counted.count > 5, "the tracer saw the append"
            # Each line the append runs, where it first runs (a loop's later rounds add
            # nothing a fault could tell apart from its first), and its very last line.
            lines = sorted({*counted.first.values(), counted.count})
            for name, error in ERRORS.items():
                for at in lines:
                    points = Points(at, error)
                    sid, view = run(store, index, points)
                    tried += 1
                    assert points.fired, f"{name} at line {at} of {counted.count} never fired"
                    divergent += comparable(store, sid) != expected
                    where = f"{name} at line {at} of {counted.count} in call {index}"
                    assert named(view, sid) == expected_view, where
                    resumed = Compactor(Policy.default(context_limit=LIMIT), store, session=sid)
                    assert resumed.view() == view, where
        print(f"{kind}: {tried} faulted runs, {divergent} divergent journals")
        assert divergent == 0
    finally:
        store.close()
