"""One run of the suite, inside its own process: the stores and policies it builds, the loop
of turns timed segment by segment, and the cold start of a long history.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any

from context_compact.compactor import Compactor
from context_compact.messages import Message
from context_compact.policy import Policy
from context_compact.store import FileStore, MemoryStore
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import Turn, synthetic_session

from .measures import (
    Chunks as Chunks,
)
from .measures import (
    GcWatch as GcWatch,
)
from .measures import (
    _ms as _ms,
)
from .measures import (
    _percentile as _percentile,
)
from .measures import (
    _result_bytes as _result_bytes,
)
from .measures import (
    memory as memory,
)
from .measures import (
    store_footprint as store_footprint,
)
from .measures import (
    written_bytes as written_bytes,
)

REQUEST = synthetic_session(0).request
STORES = ("file", "sqlite", "memory")


@dataclass(frozen=True)
class RunSpec:
    """One configuration: what a child process is asked to measure."""

    kind: str  # "loop" or "cold"
    engine: str
    window: int
    store: str
    checkpoints: tuple[int, ...] = ()
    messages: int = 0
    dump_every: int = 17
    chunk_turns: int = 1_000
    chunks: str = ""

    @property
    def label(self) -> str:
        size = f"{self.messages:,} msgs" if self.kind == "cold" else f"{max(self.checkpoints):,}"
        return f"{self.kind} {self.engine} W={self.window:,} {self.store} {size}"


def make_policy(engine: str, window: int) -> Any:
    if engine == "seed":
        return Policy.seed(context_limit=4 * window, echo=False)
    return Policy.default(context_limit=window)


def make_store(kind: str, root: Path) -> Any:
    if kind == "file":
        return FileStore(root)
    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        return import_module("context_compact.store").SqliteStore(root / "sessions.db")
    raise ValueError(f"unknown store {kind!r}; known: {', '.join(STORES)}")


def _close(store: Any) -> None:
    close = getattr(store, "close", None)
    if callable(close):
        close()


@dataclass
class _Segment:
    times: list[float] = field(default_factory=list)
    paired: list[tuple[float, float]] = field(default_factory=list)  # (prepare, dumps)
    view_chars: int = 0


def _loop_run(spec: RunSpec, root: Path, step: Callable[[int, int], None] | None) -> dict[str, Any]:
    store = make_store(spec.store, root)
    summarizer = BenchSummarizer()
    compactor = Compactor(make_policy(spec.engine, spec.window), store, summarizer)
    chunks = Chunks(spec.chunks, spec.chunk_turns)
    total = max(spec.checkpoints)
    watch = GcWatch()
    rss_start, written_start = memory()["rss_mb"], written_bytes() or 0
    points: list[dict[str, Any]] = []
    segment = _Segment()
    results = 0
    messages: list[Message] = [{"role": "user", "content": REQUEST}]
    started = time.perf_counter()
    gc.callbacks.append(watch)
    try:
        for done, turn in enumerate(chunks.turns(total), start=1):
            watch.inside = True
            began = time.perf_counter()
            messages = compactor.prepare(messages, REQUEST)
            took = time.perf_counter() - began
            watch.inside = False
            segment.times.append(took)
            if done % spec.dump_every == 0:
                began = time.perf_counter()
                text = json.dumps(messages)
                segment.paired.append((took, time.perf_counter() - began))
                segment.view_chars = len(text)
            messages.append(turn.assistant)
            messages.append(turn.results)
            results += _result_bytes(turn)
            if done in spec.checkpoints:
                row = _checkpoint(done, segment, watch, messages, summarizer)
                row.update(memory())
                row.update(store_footprint(store, root))
                row["written_bytes"] = (written_bytes() or 0) - written_start
                row["result_bytes"] = results
                points.append(row)
                segment = _Segment()
            if step and (done % 1_000 == 0 or done == total):
                step(done, total)
    finally:
        gc.callbacks.remove(watch)
        _close(store)
    return {
        "engine_name": compactor.name,
        "tokens": _token_backend(compactor),
        "pid": os.getpid(),
        "rss_start_mb": rss_start,
        "seconds": round(time.perf_counter() - started, 1),
        "points": points,
    }


def _checkpoint(
    turns: int,
    segment: _Segment,
    watch: GcWatch,
    view: list[Message],
    summarizer: BenchSummarizer,
) -> dict[str, Any]:
    ratios = [p / d for p, d in segment.paired if d > 0]
    return {
        "turns": turns,
        "messages": 1 + 2 * turns,
        "samples": len(segment.times),
        "p50_ms": _ms(statistics.median(segment.times)),
        "p99_ms": _ms(_percentile(segment.times, 0.99)),
        "max_ms": _ms(max(segment.times)),
        "dumps_p50_ms": _ms(statistics.median(d for _, d in segment.paired))
        if segment.paired
        else None,
        "vs_dumps": round(statistics.median(ratios), 3) if ratios else None,
        "view_messages": len(view) - 2,  # what prepare returned, before this turn's append
        "view_chars": segment.view_chars,
        "summaries": summarizer.calls,
        **watch.take(),
    }


def _token_backend(compactor: Any) -> str | None:
    counter = getattr(compactor, "tokens", None)
    backend = getattr(counter, "backend", None)
    return backend if isinstance(backend, str) else None


def _cold_start(spec: RunSpec, root: Path) -> dict[str, Any]:
    turns = (spec.messages - 1) // 2
    chunks = Chunks(spec.chunks, spec.chunk_turns)
    history: list[Message] = [{"role": "user", "content": REQUEST}]
    following: Turn | None = None
    for i, turn in enumerate(chunks.turns(turns + 1)):
        if i == turns:
            following = turn
        else:
            history += [turn.assistant, turn.results]
    before = memory()
    began = time.perf_counter()
    store = make_store(spec.store, root)
    compactor = Compactor(make_policy(spec.engine, spec.window), store, BenchSummarizer())
    built = time.perf_counter()
    view = compactor.prepare(history, REQUEST)
    seconds = time.perf_counter() - built
    row: dict[str, Any] = {
        "engine_name": compactor.name,
        "tokens": _token_backend(compactor),
        "pid": os.getpid(),
        "seconds": round(seconds, 3),
        "init_ms": _ms(built - began),
        "view_messages": len(view),
        "rss_before_mb": before["rss_mb"],
        **memory(),
        **store_footprint(store, root),
    }
    if following is not None:
        view.append(following.assistant)
        view.append(following.results)
        began = time.perf_counter()
        compactor.prepare(view, REQUEST)
        row["next_ms"] = _ms(time.perf_counter() - began)
    _close(store)
    return row
