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
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fault_points import Points
from store_helpers import DURABLE_KINDS, POSTGRES_URL, open_store, schema_of

from context_compact import Compactor, Policy
from context_compact.errors import ContextCompactError, SessionLocked
from context_compact.store import Store
from histories import call, results, user

pytestmark = pytest.mark.slow  # each test replays the append with a fault at every line

LIMIT = 1_500
ERRORS: dict[str, Callable[[], BaseException]] = {
    "disk_full": lambda: OSError(errno.ENOSPC, "No space left on device"),
    "locked": lambda: SessionLocked("session 's' is being written by process 1 on elsewhere"),
    "ctrl_c": lambda: KeyboardInterrupt(),
    "bug": lambda: RuntimeError("a bug in the store"),
}
EVERY = os.environ.get("CC_FAULTS") == "all"
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


SESSION = "s0000000001"


def journal_of(store: Store) -> list[dict[str, Any]]:
    """The session's records, a summary event's wall-clock timing left out (when it was
    asked for and ready is the clock's, not the session's)."""
    return [
        {k: v for k, v in r.items() if not (r["kind"] == "event" and k == "timing")}
        for r in store.records(SESSION)
    ]


def fresh(kind: str, tmp_path: Path) -> Store:
    """A store of ``kind`` at ``tmp_path/store`` without the session ``SESSION``: every run
    uses the same root and id, so the runs' views (which name files) compare as they are."""
    where = tmp_path / "store"
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir()
    if kind != "postgres":
        return open_store(kind, where)
    import psycopg

    from context_compact.store.postgres import PostgresStore

    schema = schema_of(tmp_path)
    store = PostgresStore(POSTGRES_URL, root=where, schema=schema)
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        for table in ("writers", "records", "messages", "edits", "events", "sessions"):
            column = "id" if table == "sessions" else "session"
            conn.execute(f"DELETE FROM {schema}.{table} WHERE {column} = %s", (SESSION,))
    return store


def run(store: Store, index: int = -1, points: Points | None = None) -> list[Any]:
    """The scenario's calls, each passing the caller's full list; call ``index`` runs under
    ``points`` and, when it fails, is retried once as it was (what our errors tell callers).
    The view it ends with, after checking that a resumed session sends the same."""
    compactor = Compactor(Policy.default(context_limit=LIMIT), store, session=SESSION)
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
    resumed = Compactor(Policy.default(context_limit=LIMIT), store, session=SESSION)
    assert resumed.view() == view
    return view


@pytest.mark.parametrize("kind", DURABLE_KINDS)
def test_a_fault_anywhere_in_the_append_then_a_retry_journals_what_an_unfaulted_run_does(
    tmp_path: Path, kind: str
) -> None:
    def store() -> Store:
        return fresh(kind, tmp_path)

    first = store()
    expected_view = run(first)
    expected = journal_of(first)
    first.close()
    assert {"message", "edit", "event"} <= {r["kind"] for r in expected}  # it compacts
    assert any(r.get("op") == "summarize" for r in expected)
    tried = divergent = 0
    # PostgreSQL's runs cost most: by default only the later turn (CC_FAULTS=all: both).
    calls = FAULTED_CALLS if EVERY or kind != "postgres" else FAULTED_CALLS[1:]
    for index in calls:
        counted = Points()
        counting = store()
        run(counting, index, counted)
        counting.close()
        assert counted.count > 5, "the tracer saw the append"
        # Each line the append runs, where it first runs (a loop's later rounds add nothing
        # a fault could tell apart from its first), and its very last line.
        lines = sorted({*counted.first.values(), counted.count})
        for k, (name, error) in enumerate(ERRORS.items()):
            # By default each line gets one of the errors in turn (every line and every
            # error tried); CC_FAULTS=all tries every error at every line (minutes).
            for at in lines if EVERY else lines[k :: len(ERRORS)]:
                points = Points(at, error)
                faulted = store()
                where = f"{name} at line {at} of {counted.count} in call {index}"
                try:
                    view = run(faulted, index, points)
                    tried += 1
                    assert points.fired, f"{where}: never fired"
                    divergent += journal_of(faulted) != expected
                    assert view == expected_view, where
                finally:
                    faulted.close()
    print(f"{kind}: {tried} faulted runs ({len(ERRORS)} errors), {divergent} divergent journals")
    assert divergent == 0


def test_ctrl_c_at_any_line_of_a_call_then_going_on_leaves_a_whole_journal(
    tmp_path: Path,
) -> None:
    # A signal lands anywhere: between a change of the engine's state and the record that
    # journals it too (the `chat` loop goes on after Ctrl-C with the same compactor). The
    # call's records up to the signal are journaled (a process that exits then keeps them),
    # the engine reads the session back, and the retry goes on from there: every message
    # the caller sent is logged once, in order, and the session resumes to the live view.
    sent = [m for m in CALLS[-1]]
    counted = Points(whole_call=True)
    run(fresh("files", tmp_path), 1, counted)
    lines = sorted({*counted.first.values(), counted.count})
    assert len(lines) > 100, "the tracer saw the engine's lines"
    for at in lines if EVERY else lines[::5]:
        points = Points(at, KeyboardInterrupt, whole_call=True)
        store = fresh("files", tmp_path)
        where = f"Ctrl-C at line {at} of {counted.count}"
        try:
            run(store, 1, points)  # it resumes to the live view (checked there)
            assert points.fired, where
            logged = [r for r in store.records(SESSION) if r["kind"] == "message"]
            assert [r["seq"] for r in logged] == list(range(len(sent))), where
            assert [r["message"] for r in logged] == sent, where
        finally:
            store.close()


def sdk_loop(store: Store, index: int = -1, points: Points | None = None) -> list[Any]:
    """The scenario as the SDK docs' loop runs it: each call is given the view the one
    before returned plus the caller's new turn, so once a call has compacted, its list
    extends only that view (not the log). Call ``index`` runs under ``points`` and, when it
    fails, is retried with the same list. The view it ends with, a resumed one checked."""
    compactor = Compactor(Policy.default(context_limit=LIMIT), store, session=SESSION)
    view: list[Any] = []
    for i, messages in enumerate(CALLS):
        given = [*view, *messages[len(CALLS[i - 1]) :]] if i else list(messages)
        if i == index and points is not None:
            points.arm()
            try:
                view = compactor.prepare(given, "fix the test")
                continue
            except KeyboardInterrupt:
                pass
            finally:
                points.disarm()
        view = compactor.prepare(given, "fix the test")
    resumed = Compactor(Policy.default(context_limit=LIMIT), store, session=SESSION)
    assert resumed.view() == view
    return view


@pytest.mark.parametrize("kind", ["files", "sqlite"])
def test_ctrl_c_at_any_bytecode_after_the_append_then_the_same_list_goes_on_with_the_session(
    tmp_path: Path, kind: str
) -> None:
    # A signal after the store committed the call's batch, at any bytecode up to the end of
    # the call (inside the journal's own bookkeeping, between a call and the store of its
    # result: where a clock's SIGINT lands and a tracer's line does not), then the same
    # list again: the batch is found in the journal, so the retry is not taken for a new
    # conversation although its list extends only the view the compacting call never
    # handed out.
    counted = Points(whole_call=True, opcodes=True)
    expected = sdk_loop(fresh(kind, tmp_path), 1, counted)
    after = counted.after_append
    assert after is not None and counted.count - after > 50, "the tracer saw the append"
    for at in range(after, counted.count + 1):
        points = Points(at, KeyboardInterrupt, whole_call=True, opcodes=True)
        store = fresh(kind, tmp_path)
        where = f"Ctrl-C at bytecode {at} of {counted.count} ({kind})"
        try:
            view = sdk_loop(store, 1, points)
            assert points.fired, where
            records = list(store.records(SESSION))
            assert [r for r in records if r["kind"] == "restart"] == [], where
            messages = [json.dumps(r["message"]) for r in records if r["kind"] == "message"]
            assert len(messages) == len(set(messages)) == len(CALLS[-1]), where
            assert view == expected, where
        finally:
            store.close()
