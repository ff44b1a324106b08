"""``prepare``'s time on SqliteStore against FileStore: p50 and p99 of the last half of a loop.

One ``Compactor`` (default policy, 12,500 tokens, the bench's summarizer) per store, driven N
turns of the synthetic coding session as an agent loop drives it; p50/p99 over the last N/2
turns, in ms, ``repeats`` times alternating the stores (times on a shared machine are noisy:
compare the two stores within one run, and runs made at the same time).

Run: ``python scripts/store_p99.py [turns, default 2000] [repeats, default 1]``; prints JSON,
``{"file": [[p50, p99], ...], "sqlite": [...]}``.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from context_compact.compactor import Compactor
from context_compact.policy import Policy
from context_compact.store import FileStore, SqliteStore
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session


def loop(kind: str, turns: int) -> tuple[float, float]:
    work = synthetic_session(turns, seed=7)
    root = Path(tempfile.mkdtemp(prefix="store-p99-"))
    try:
        store: Any = FileStore(root) if kind == "file" else SqliteStore(root / "s.db")
        compactor = Compactor(Policy.default(context_limit=12_500), store, BenchSummarizer())
        messages: list[Any] = [{"role": "user", "content": work.request}]
        times = []
        for turn in work.turns:
            started = time.perf_counter()
            messages = compactor.prepare(messages, work.request)
            times.append((time.perf_counter() - started) * 1000)
            messages += [turn.assistant, turn.results]
        store.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    last = sorted(times[turns // 2 :])
    return round(statistics.median(last), 3), round(last[int(len(last) * 0.99)], 2)


def main(turns: int, repeats: int) -> None:
    found: dict[str, list[tuple[float, float]]] = {"file": [], "sqlite": []}
    for _ in range(repeats):
        for kind in found:
            found[kind].append(loop(kind, turns))
    print(json.dumps(found))


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(args[0] if args else 2000, args[1] if len(args) > 1 else 1)
