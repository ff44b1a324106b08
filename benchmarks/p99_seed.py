"""``prepare``'s p99 late in a long session, ours against the seed's, on FileStore and SqliteStore.

    python benchmarks/p99_seed.py --turns 20000 --window 1000 [--profile 12]

Per store, our policy and the seed's each drive one ``Compactor`` through ``--turns`` turns of
the bench's synthetic coding session (``bench --scaling``'s, streamed 1,000 turns at a time;
``testing/workload.py``: results 80% 0.2-3k chars, 15% 5-20k, 5% 40-120k) at a 12,500-token
limit, as an agent loop drives it (handed back what it returned plus the new turn), the
bench's summarizer, in step: turn k of both before turn k+1 of
either, so the load of a shared machine falls on both alike. Reported over the last
``--window`` turns: p50, p99 and max (ms), and our p99 over the seed's. Then our policy alone
per store: ``written`` is ``wchar`` of ``/proc/self/io`` over its loop (journal, WAL, the
files the view names) per byte of tool results given; ``--profile K`` sums the cProfile of
the K slowest calls of the window and prints the top functions by own time (profiling slows
each call: read what costs, not the times).
"""

from __future__ import annotations

import argparse
import cProfile
import heapq
import io
import json
import pstats
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from context_compact import Compactor, Policy
from context_compact.store import FileStore, SqliteStore
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import Turn
from context_compact_bench.measures import Chunks, written_bytes
from context_compact_bench.suite_run import REQUEST

LIMIT = 12_500
POLICIES = ("default", "seed")


def _policy(name: str) -> Any:
    if name == "seed":
        return Policy.seed(context_limit=4 * LIMIT, echo=False)  # in chars, as the bench
    return Policy.default(context_limit=LIMIT)


def _store(kind: str, root: Path) -> Any:
    return FileStore(root) if kind == "file" else SqliteStore(root / "s.db")


def _turns(count: int) -> Iterator[Turn]:
    """The bench's session (``bench --scaling``'s), streamed a chunk of turns at a time: the
    loop holds only what the agent would (the view), not 20,000 turns it has yet to play."""
    chunks = Chunks(str(Path(tempfile.gettempdir()) / "p99-seed-chunks"), 1_000)
    chunks.directory.mkdir(exist_ok=True)
    return chunks.turns(count)


def lockstep(kind: str, turns: int, window: int) -> list[dict[str, Any]]:
    """Our policy and the seed's driven turn by turn in step on two stores of ``kind``, each
    turn's two calls in alternating order: a load that comes and goes on a shared machine
    falls on both alike. Their p50, p99 and max over the last ``window`` turns."""
    roots = {p: Path(tempfile.mkdtemp(prefix=f"p99-{p}-")) for p in POLICIES}
    try:
        stores = {p: _store(kind, roots[p]) for p in POLICIES}
        compactors = {p: Compactor(_policy(p), stores[p], BenchSummarizer()) for p in POLICIES}
        messages: dict[str, list[Any]] = {
            p: [{"role": "user", "content": REQUEST}] for p in POLICIES
        }
        times: dict[str, list[float]] = {p: [] for p in POLICIES}
        for number, turn in enumerate(_turns(turns)):
            order = POLICIES if number % 2 == 0 else POLICIES[::-1]
            for p in order:
                started = time.perf_counter()
                messages[p] = compactors[p].prepare(messages[p], REQUEST)
                times[p].append((time.perf_counter() - started) * 1000)
                messages[p] += [turn.assistant, turn.results]
        for store in stores.values():
            store.close()
    finally:
        for root in roots.values():
            shutil.rmtree(root, ignore_errors=True)
    rows = []
    for p in POLICIES:
        last = sorted(times[p][-window:])
        rows.append(
            {
                "policy": p,
                "store": kind,
                "turns": turns,
                "p50_ms": round(statistics.median(last), 3),
                "p99_ms": round(last[int(len(last) * 0.99)], 2),
                "max_ms": round(last[-1], 2),
            }
        )
    return rows


def alone(kind: str, turns: int, window: int, profile: int) -> dict[str, Any]:
    """Our policy alone on a store of ``kind``: bytes written per byte of tool results over
    the loop, and with ``profile`` the summed cProfile of the slowest calls of the window."""
    root = Path(tempfile.mkdtemp(prefix="p99-alone-"))
    slow: list[tuple[float, int, pstats.Stats]] = []
    try:
        store = _store(kind, root)
        compactor = Compactor(_policy("default"), store, BenchSummarizer())
        messages: list[Any] = [{"role": "user", "content": REQUEST}]
        given = 0
        wrote = written_bytes() or 0
        for number, turn in enumerate(_turns(turns)):
            profiler = cProfile.Profile() if profile and number >= turns - window else None
            started = time.perf_counter()
            if profiler is not None:
                profiler.enable()
            messages = compactor.prepare(messages, REQUEST)
            if profiler is not None:
                profiler.disable()
                item = (time.perf_counter() - started, number, pstats.Stats(profiler))
                (heapq.heappush if len(slow) < profile else heapq.heappushpop)(slow, item)
            messages += [turn.assistant, turn.results]
            given += sum(len(str(b.get("content", ""))) for b in turn.results["content"])
        store.close()
        wrote = (written_bytes() or 0) - wrote
    finally:
        shutil.rmtree(root, ignore_errors=True)
    row: dict[str, Any] = {"store": kind, "written_per_result_byte": round(wrote / given, 2)}
    if slow:
        total = slow[0][2]
        for _, _, stats in slow[1:]:
            total.add(stats)
        out = io.StringIO()
        total.stream = out  # type: ignore[attr-defined]
        total.sort_stats("tottime").print_stats(30)
        row["profiled_turns"] = sorted(n for _, n, _ in slow)
        row["profile"] = out.getvalue()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20_000)
    parser.add_argument("--window", type=int, default=1_000)
    parser.add_argument("--stores", nargs="+", default=["file", "sqlite"])
    parser.add_argument("--profile", type=int, default=0, help="profile the K slowest calls")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    rows, alone_rows = [], []
    for kind in args.stores:
        found = {r["policy"]: r for r in lockstep(kind, args.turns, args.window)}
        found["default"]["p99_vs_seed"] = round(
            found["default"]["p99_ms"] / found["seed"]["p99_ms"], 2
        )
        for r in found.values():
            rows.append(r)
            print(json.dumps(r), flush=True)
    for kind in args.stores:
        found = alone(kind, args.turns, args.window, args.profile)
        alone_rows.append(found)
        print(json.dumps({k: v for k, v in found.items() if k != "profile"}), flush=True)
        if "profile" in found:
            print(f"--- {kind}: the {args.profile} slowest calls, profiled ---")
            print(found["profile"], flush=True)
    if args.json is not None:
        data = {"config": vars(args) | {"json": None}, "rows": rows, "alone": alone_rows}
        args.json.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
