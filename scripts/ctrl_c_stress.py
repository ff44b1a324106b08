"""Ctrl-C at random moments of ``prepare``, then the same call retried, on FileStore and SQLite.

A clock (``setitimer``) delivers a signal whose handler is Python's own SIGINT handler
(``KeyboardInterrupt``), at a random moment of a call: anywhere between two bytecodes,
unlike a tracer that raises at a function call. After each interrupt the same call is made
again with the same list, as a person at a prompt does, and the session goes on. Counted per
store: interrupts that landed inside the call, sessions restarted (``restart`` records),
messages logged twice, and whether a resumed session sends the live view.

    python scripts/ctrl_c_stress.py --interrupts 300          # both stores
    python scripts/ctrl_c_stress.py --store files --seed 3 --interrupts 50 --twice --why
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from context_compact import Compactor, FileStore, Policy, SqliteStore
from context_compact.store.base import Store
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session

TURNS = 40


def _store(kind: str, root: Path) -> Store:
    return FileStore(root) if kind == "files" else SqliteStore(root / "s.db")


def _interrupt(_signum: int, _frame: Any) -> None:
    signal.default_int_handler(signal.SIGINT, _frame)


def one_session(
    kind: str, root: Path, rng: random.Random, seed: int, why: bool = False, twice: bool = False
) -> dict[str, Any]:
    """A session of ``TURNS`` turns, each call interrupted at a random moment and retried
    (with ``twice``, the first retry interrupted too); its counts."""
    policy = Policy.default(context_limit=5_000)
    store = _store(kind, root)
    live = Compactor(policy, store, BenchSummarizer(), session="s")
    restarted: list[Any] = []
    live.subscribe(
        lambda event: restarted.append(event) if event.stage == "session_restart" else None
    )
    where = ""
    w = synthetic_session(TURNS, seed=seed)
    pending: list[Any] = [{"role": "user", "content": w.request}]
    took = 0.005  # a call's length, learned from the calls that were not interrupted
    landed = outside = 0
    for turn in w.turns:
        view = None
        before = len(restarted)
        for attempt in range(2 if twice else 1):  # each attempt interrupted, then one not
            at = rng.uniform(0.0, took * (1.1 if attempt == 0 else 1.5))
            started = time.perf_counter()
            try:
                signal.setitimer(signal.ITIMER_REAL, max(at, 1e-6))
                view = live.prepare(pending, w.request)
                signal.setitimer(signal.ITIMER_REAL, 0)
            except KeyboardInterrupt:
                signal.setitimer(signal.ITIMER_REAL, 0)
                where += f"attempt {attempt}: {traceback.format_exc(limit=-6)}"
                if view is None:
                    landed += 1
                else:
                    outside += 1
            if view is not None:
                break
        if view is None:
            view = live.prepare(pending, w.request)  # the same call, retried
        elif attempt == 0:
            took = 0.8 * took + 0.2 * (time.perf_counter() - started)
        if why and len(restarted) > before:
            print(f"--- a restart after these interrupts ({kind}):\n{where}", file=sys.stderr)
        where = ""
        pending = [*view, turn.assistant, turn.results]
    records = list(store.records("s"))
    restarts = sum(r["kind"] == "restart" for r in records)
    logged = [json.dumps(r["message"], sort_keys=True) for r in records if r["kind"] == "message"]
    resumed = Compactor(policy, _store(kind, root), BenchSummarizer(), session="s")
    same = json.dumps(resumed.view()) == json.dumps(live.view())
    return {
        "interrupted": landed,
        "after_return": outside,
        "restarts": restarts,
        "logged_twice": len(logged) - len(set(logged)),
        "resume_differs": 0 if same else 1,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=["files", "sqlite", "both"], default="both")
    parser.add_argument("--interrupts", type=int, default=300, help="at least this many per store")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--why", action="store_true", help="where each restarting one landed")
    parser.add_argument("--twice", action="store_true", help="interrupt the first retry too")
    args = parser.parse_args()
    signal.signal(signal.SIGALRM, _interrupt)
    kinds = ["files", "sqlite"] if args.store == "both" else [args.store]
    for kind in kinds:
        rng = random.Random(args.seed)
        total: dict[str, int] = {}
        sessions = 0
        while total.get("interrupted", 0) < args.interrupts:
            with tempfile.TemporaryDirectory() as root:
                counts = one_session(kind, Path(root), rng, args.seed * 1000 + sessions, args.why)
            sessions += 1
            for name, value in counts.items():
                total[name] = total.get(name, 0) + value
        print(json.dumps({"store": kind, "twice": args.twice, "sessions": sessions, **total}))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
