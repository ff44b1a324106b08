"""What a worker pays to pick up a session: resume + ``view()`` + one ``prepare``, by length.

    python benchmarks/resume_cost.py --turns 1000 16000 --stores file sqlite postgres
    python benchmarks/resume_cost.py --grow --turns 1000 10000 50000 --stores postgres

Each session is played for N turns of a synthetic coding loop (default policy at 12,500
tokens, the fake summarizer), then resumed by a fresh store object and ``Compactor`` (as a
stateless worker would), its view taken and one more turn prepared; the median of
``--repeats`` such pickups. What a resume replays after its checkpoint depends on where the
session stopped (0 to ``checkpoint.EVERY`` records), so the pickups are spread over one
checkpoint interval: ``--gap`` more turns are played between two of them, and every length
gets the same spread. The same pickup is also timed with the store's checkpoints hidden
(``full replay``: what a resume cost before them; ``--full-repeats``, 0 skips it). Ratios are
taken within this one run (the machines are noisy). PostgreSQL at ``CC_TEST_POSTGRES_URL``.

``--grow``: one session instead of one per length, played to each ``--turns`` mark in turn;
at a mark the pickups run as above, and the last worker's resume plays on to the next mark
(a session grown to 50,000 turns, picked up by a fresh worker at 1,000, 10,000 and 50,000).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from context_compact import Compactor, Policy
from context_compact.store import FileStore, SqliteStore
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session

URL = os.environ.get("CC_TEST_POSTGRES_URL", "postgresql://127.0.0.1:5432/test")
LIMIT = 12_500


def opener(kind: str, where: Path, schema: str) -> Any:
    if kind == "sqlite":
        return lambda: SqliteStore(where / "sessions.db")
    if kind == "file":
        return lambda: FileStore(where)
    from context_compact.store.postgres import PostgresStore

    return lambda: PostgresStore(URL, root=where, schema=schema)


class FullReplay:
    """A store whose checkpoints are hidden: every resume replays the whole journal."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        if name in ("checkpoints", "records_from"):
            raise AttributeError(name)
        return getattr(self._store, name)


def play(c: Compactor, view: list[Any], steps: Any, request: str, turns: int) -> list[Any]:
    for _ in range(turns):
        view.extend(next(steps))
        view = c.prepare(view, request)
        c.observe(len(json.dumps(view)) // 4 + 400)
    return view


def pickup(open_store: Any, sid: str, steps: Any, request: str, hide: bool, gap: int) -> float:
    """One resume + view + prepare, timed; then ``gap`` more turns played by it, untimed."""
    store = open_store()
    try:
        started = time.perf_counter()
        c = Compactor(
            Policy.default(context_limit=LIMIT),
            FullReplay(store) if hide else store,
            BenchSummarizer(),
            session=sid,
        )
        view = c.prepare([*c.view(), *next(steps)], request)
        took = time.perf_counter() - started
        play(c, view, steps, request, gap)
        return took
    finally:
        store.close()


def run(
    kind: str, turns: int, repeats: int, full_repeats: int, gap: int, work: Path
) -> dict[str, Any]:
    schema = f"cc_resume_{uuid.uuid4().hex[:8]}"
    open_store = opener(kind, work / f"{kind}-{turns}", schema)
    w = synthetic_session(turns + (repeats + full_repeats) * (gap + 1) + 2, seed=3)
    steps = iter([[t.assistant, t.results] for t in w.turns])
    store = open_store()
    c = Compactor(Policy.default(context_limit=LIMIT), store, BenchSummarizer())
    view = c.prepare([{"role": "user", "content": w.request}], w.request)
    played = time.perf_counter()
    play(c, view, steps, w.request, turns)
    played = time.perf_counter() - played
    sid = c.session_id
    assert sid is not None
    store.close()
    fast = [pickup(open_store, sid, steps, w.request, False, gap) for _ in range(repeats)]
    full = [pickup(open_store, sid, steps, w.request, True, 0) for _ in range(full_repeats)]
    drop(kind, schema)
    return row(kind, turns, played, fast, full)


def row(
    kind: str, turns: int, played: float, fast: list[float], full: list[float]
) -> dict[str, Any]:
    return {
        "store": kind,
        "turns": turns,
        "play_s": round(played, 1),
        "pickup_ms": round(1000 * statistics.median(fast), 1),
        "pickup_p90_ms": round(1000 * sorted(fast)[(9 * len(fast)) // 10], 1),
        "full_replay_ms": round(1000 * statistics.median(full), 1) if full else None,
    }


def drop(kind: str, schema: str) -> None:
    if kind == "postgres":
        import psycopg

        with psycopg.connect(URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def grow(
    kind: str, marks: list[int], repeats: int, full_repeats: int, gap: int, work: Path
) -> list[dict[str, Any]]:
    """One session, picked up at each of ``marks`` (turns played so far), growing between."""
    schema = f"cc_resume_{uuid.uuid4().hex[:8]}"
    open_store = opener(kind, work / f"{kind}-grow", schema)
    per_mark = (repeats + full_repeats) * (gap + 1) + 2
    w = synthetic_session(max(marks) + len(marks) * per_mark + 2, seed=3)
    steps = iter([[t.assistant, t.results] for t in w.turns])
    store = open_store()
    c = Compactor(Policy.default(context_limit=LIMIT), store, BenchSummarizer())
    view = c.prepare([{"role": "user", "content": w.request}], w.request)
    sid = c.session_id
    assert sid is not None
    rows, done, played = [], 0, 0.0
    for mark in sorted(marks):
        started = time.perf_counter()
        view = play(c, view, steps, w.request, mark - done)
        played += time.perf_counter() - started
        done = mark
        store.close()
        fast = [pickup(open_store, sid, steps, w.request, False, gap) for _ in range(repeats)]
        full = [pickup(open_store, sid, steps, w.request, True, 0) for _ in range(full_repeats)]
        rows.append(row(kind, mark, played, fast, full))
        print(json.dumps(rows[-1]), flush=True)
        # The next stretch is played by a worker that resumed the session.
        store = open_store()
        c = Compactor(Policy.default(context_limit=LIMIT), store, BenchSummarizer(), session=sid)
        view = c.view()
    store.close()
    drop(kind, schema)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[1000, 16000])
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgres"])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--gap", type=int, default=4, help="turns played between two pickups")
    parser.add_argument("--full-repeats", type=int, default=3)
    parser.add_argument("--grow", action="store_true", help="one session grown to each length")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.stores:
            if args.grow:
                rows += grow(kind, args.turns, args.repeats, args.full_repeats, args.gap, Path(tmp))
                continue
            for turns in args.turns:
                rows.append(run(kind, turns, args.repeats, args.full_repeats, args.gap, Path(tmp)))
                print(json.dumps(rows[-1]), flush=True)
    for kind in args.stores:
        mine = [r for r in rows if r["store"] == kind]
        if len(mine) >= 2:
            small, big = mine[0], mine[-1]
            print(
                f"{kind}: pickup {big['turns']} turns / {small['turns']} turns = "
                f"{big['pickup_ms'] / small['pickup_ms']:.2f}x "
                f"({big['pickup_ms']} ms vs {small['pickup_ms']} ms)"
            )


if __name__ == "__main__":
    main()
