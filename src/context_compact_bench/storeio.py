"""``bench --store-io``: what the durable stores write per byte of tool output, and recall's time.

Two measurements, each store in this process, on the synthetic coding session
(``testing/workload.py``: 80% of results 0.2-3k chars, 15% 5-20k, 5% 40-120k):

* **Bytes written**: one ``Compactor`` (default policy, 12,500 tokens) driven ``write_turns``
  turns as an agent loop drives it, on a ``FileStore`` and on ``SqliteStore`` at the page sizes
  and with or without compression of ``SQLITE_WRITES`` (512 and compressed are the store's
  own for a new database, 4096 SQLite's default). Written
  is ``wchar`` of ``/proc/self/io`` over the loop (every byte handed to ``write``: journal, WAL,
  checkpoints, the files the view names), divided by the bytes of tool results the loop was
  given. Commits counts the database's ``COMMIT`` statements (one per turn is the goal).
* **Recall**: a session of N turns journaled as the engine journals messages (one append per
  turn), then ``recall`` of planted facts (one hit each) and of absent text (no hit):
  ``index_s`` is the first search, which builds the side index of all N turns
  (``store/sqlite/index.py``); p50/p99 are over ``queries`` searches after it. ``scan_ms`` is the
  median of a few linear scans (``text.scan`` over ``records``: what recall did before), for
  the same queries.

Times are wall-clock ``perf_counter`` milliseconds on a shared machine: read ratios and orders
of magnitude, not exact figures.
"""

from __future__ import annotations

import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from context_compact.compactor import Compactor
from context_compact.policy import Policy
from context_compact.session.recall import recall
from context_compact.store import FileStore, SqliteStore
from context_compact.store.sqlite import schema as sqlite_schema
from context_compact.store.text import scan
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session

from .suite import _percentile, _result_bytes, written_bytes

SQLITE_WRITES = ((512, True), (512, False), (1024, True), (4096, True), (4096, False))
"""(page size, texts compressed) of each SqliteStore write measurement."""
RECALL_TURNS = (1_000, 10_000, 50_000)
CHUNK = 500  # turns generated at a time (the whole session never sits in memory)


def _store(kind: str, root: Path, compress: bool = True) -> Any:
    if kind == "file":
        return FileStore(root)
    return SqliteStore(root / "sessions.db", compress=compress)


def measure_writes(
    kind: str, turns: int, page_size: int | None = None, compress: bool = True
) -> dict[str, Any]:
    """One loop of ``turns`` turns on a new store; bytes written per result byte."""
    root = Path(tempfile.mkdtemp(prefix="cc-storeio-"))
    saved = sqlite_schema.PAGE_SIZE
    if page_size is not None:
        sqlite_schema.PAGE_SIZE = page_size
    try:
        store = _store(kind, root, compress)
        commits = [0]
        if isinstance(store, SqliteStore):
            store.db.connection.set_trace_callback(
                lambda sql: commits.__setitem__(0, commits[0] + (sql == "COMMIT"))
            )
        compactor = Compactor(Policy.default(context_limit=12_500), store, BenchSummarizer())
        work = synthetic_session(turns, seed=7)
        messages: list[Any] = [{"role": "user", "content": work.request}]
        results = 0
        before = written_bytes() or 0
        started = time.perf_counter()
        for turn in work.turns:
            messages = compactor.prepare(messages, work.request)
            messages += [turn.assistant, turn.results]
            results += _result_bytes(turn)
        store.close()
        seconds = time.perf_counter() - started
        written = (written_bytes() or 0) - before
    finally:
        sqlite_schema.PAGE_SIZE = saved
        shutil.rmtree(root, ignore_errors=True)
    return {
        "store": kind,
        "page_size": page_size,
        "compressed": compress if kind == "sqlite" else None,
        "turns": turns,
        "result_bytes": results,
        "written_bytes": written,
        "written_ratio": round(written / results, 2) if results else None,
        "commits": commits[0] if isinstance(store, SqliteStore) else None,
        "ms_per_turn": round(seconds * 1000 / turns, 3),
    }


def _journal(store: Any, turns: int) -> tuple[str, list[str]]:
    """A session of ``turns`` turns as the engine journals messages; some planted facts."""
    session = store.create_session({"bench": "store-io"})
    rng = random.Random(3)
    facts: list[str] = []
    seq = 0
    for chunk in range(0, turns, CHUNK):
        work = synthetic_session(min(CHUNK, turns - chunk), seed=100 + chunk)
        for turn in work.turns:
            records = []
            for message in (turn.assistant, turn.results):
                records.append({"kind": "message", "seq": seq, "message": message})
                seq += 1
            store.append(session, records)
            if rng.random() < 0.05:
                facts.append(rng.choice(turn.facts))
    if not facts:  # a very short session: ask for its first fact
        facts.append(synthetic_session(1, seed=100).turns[0].facts[0])
    return session, facts


def measure_recall(kind: str, turns: int, queries: int = 100, scans: int = 3) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="cc-recall-"))
    try:
        store = _store(kind, root)
        session, facts = _journal(store, turns)
        rng = random.Random(5)
        asked = [rng.choice(facts) for _ in range(queries // 2)]
        asked += [f"FACT-{rng.getrandbits(40):x}-absent" for _ in range(queries - len(asked))]
        started = time.perf_counter()
        recall(store, session, asked[0])
        index_s = time.perf_counter() - started
        times = []
        for query in asked:
            began = time.perf_counter()
            page = recall(store, session, query)
            times.append((time.perf_counter() - began) * 1000)
            if query in facts and page.hits < 1:
                raise AssertionError(f"recall lost the planted fact {query!r}")
        scanned = []
        for query in asked[:scans]:
            began = time.perf_counter()
            sum(1 for _ in scan(store.records(session), query))
            scanned.append((time.perf_counter() - began) * 1000)
        store.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "store": kind,
        "turns": turns,
        "queries": len(times),
        "index_s": round(index_s, 2),
        "p50_ms": round(statistics.median(times), 2),
        "p99_ms": round(_percentile(times, 0.99), 2),
        "scan_ms": round(statistics.median(scanned), 1),
    }


def measure_store_io(
    write_turns: int = 2_000,
    recall_turns: Sequence[int] = RECALL_TURNS,
    queries: int = 100,
    on_step: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    writes = [measure_writes("file", write_turns)]
    if on_step:
        on_step("file writes")
    for size, compress in SQLITE_WRITES:
        writes.append(measure_writes("sqlite", write_turns, size, compress))
        if on_step:
            on_step(f"sqlite writes, {size}-byte pages, compressed: {compress}")
    recalls = []
    for turns in recall_turns:
        for kind in ("file", "sqlite"):
            recalls.append(measure_recall(kind, turns, queries))
            if on_step:
                on_step(f"{kind} recall at {turns:,} turns")
    return {"writes": writes, "recall": recalls}


def table(result: dict[str, Any]) -> str:
    """The README's two tables (markdown)."""
    lines = [
        "| store | page size | texts | turns | written / result bytes | commits | ms per turn |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in result["writes"]:
        size = f"{row['page_size']:,}" if row["page_size"] else "-"
        commits = f"{row['commits']:,}" if row["commits"] is not None else "-"
        texts = {True: "zlib", False: "as is", None: "-"}[row.get("compressed")]
        lines.append(
            f"| {row['store']} | {size} | {texts} | {row['turns']:,} | {row['written_ratio']}x "
            f"| {commits} | {row['ms_per_turn']} |"
        )
    lines += [
        "",
        "| store | turns | first search (builds the index) s | recall p50 ms | recall p99 ms "
        "| linear scan ms |",
        "|---|---|---|---|---|---|",
    ]
    for row in result["recall"]:
        lines.append(
            f"| {row['store']} | {row['turns']:,} | {row['index_s']} | {row['p50_ms']} | "
            f"{row['p99_ms']} | {row['scan_ms']} |"
        )
    return "\n".join(lines)
