"""Long sessions: per-turn time, memory and files at 1k, 10k and 50k turns, and cold starts.

Each configuration runs in a process of its own (``python -m context_compact.bench.longrun
CONFIG``) so that its resident memory is its own. A run drives one ``Compactor`` the way the
Anthropic SDK docs' loop does (``messages = prepare(messages)``, then ``messages.append`` of
the model's turn and the tool results) over a synthetic session that cycles through 2,000
generated turns with fresh tool ids, and reports at each mark:

* ``p50_ms`` / ``p99_ms``: ``prepare`` wall time over the turns since the previous mark;
* ``dumps_ratio``: median ``prepare`` time over median ``json.dumps(view)`` time, both timed
  on the same turns (every 10th): what validating or serializing the whole view would cost;
* ``rss_mb``: resident memory (VmRSS) at the mark; ``gc_max_ms``: the longest garbage
  collection pause seen since the previous mark;
* ``files``: files under the store's root; ``bytes_written``: bytes under the root (database
  and files) per byte of tool-result text logged.

A cold start is one ``prepare`` on a fresh compactor given a whole N-message history.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

MARKS = (1_000, 10_000, 50_000)
QUICK_MARKS = (200, 1_000)
WINDOWS = (12_500, 200_000)
COLD = 20_000
QUICK_COLD = 2_000
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class LongPoint:
    engine: str
    store: str
    window: int
    turns: int
    p50_ms: float
    p99_ms: float
    dumps_ratio: float
    rss_mb: float
    gc_max_ms: float
    files: int
    bytes_written: float
    view_messages: int


@dataclass(frozen=True)
class ColdPoint:
    engine: str
    store: str
    messages: int
    history_mb: float
    seconds: float


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def turns(count: int, seed: int = 1) -> Iterator[tuple[dict[str, Any], dict[str, Any], str]]:
    """``count`` turns (assistant message, tool results, request), cycling through 2,000
    generated ones with fresh tool ids."""
    from .workload import synthetic_session

    workload = synthetic_session(min(count, 2_000), seed=seed)
    for i in range(count):
        turn = workload.turns[i % len(workload.turns)]
        assistant = {
            **turn.assistant,
            "content": [
                {**b, "id": f"{b['id']}_{i}"} if b.get("type") == "tool_use" else b
                for b in turn.assistant["content"]
            ],
        }
        # Past the first cycle each result gets a distinct first line, so that content
        # addressing does not make a long session look cheaper than it is.
        cycle = i // len(workload.turns)
        results = {
            **turn.results,
            "content": [
                {
                    **b,
                    "tool_use_id": f"{b['tool_use_id']}_{i}",
                    "content": f"[cycle {cycle}]\n{b['content']}" if cycle else b["content"],
                }
                for b in turn.results["content"]
            ],
        }
        yield assistant, results, workload.request


def _compactor(engine: str, store_kind: str, window: int, root: Path) -> Any:
    from ..compactor import Compactor
    from ..policy import Policy
    from ..store import FileStore, MemoryStore, workdir_store
    from .fakes import BenchSummarizer

    if engine == "seed":
        policy: Any = Policy.seed(context_limit=CHARS_PER_TOKEN * window, echo=False)
    else:
        policy = Policy.default(context_limit=window)
    store: Any
    if store_kind == "sqlite":
        store = workdir_store(root)
    elif store_kind == "files":
        store = FileStore(root)
    else:
        store = MemoryStore()
    return Compactor(policy, store, BenchSummarizer())


def _disk(root: Path) -> tuple[int, int]:
    files = size = 0
    for folder, _, names in os.walk(root):
        for name in names:
            files += 1
            size += os.path.getsize(os.path.join(folder, name))
    return files, size


def loop(engine: str, store_kind: str, window: int, marks: Sequence[int]) -> list[LongPoint]:
    """One session driven to ``max(marks)`` turns; a point at each mark."""
    pauses: list[float] = []
    started: list[float] = []

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            pauses.append((time.perf_counter() - started.pop()) * 1000)

    points: list[LongPoint] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        compactor = _compactor(engine, store_kind, window, root)
        gc.callbacks.append(on_gc)
        times: list[float] = []
        dumps: list[float] = []
        prepares: list[float] = []
        result_chars = 0
        messages: list[Any] = []
        marks = sorted(marks)
        for i, (assistant, results, request) in enumerate(turns(max(marks))):
            if not messages:
                messages = [{"role": "user", "content": request}]
            t0 = time.perf_counter()
            messages = compactor.prepare(messages, request)
            elapsed = time.perf_counter() - t0
            times.append(elapsed)
            if i % 10 == 0:
                t1 = time.perf_counter()
                json.dumps(messages)
                dumps.append(time.perf_counter() - t1)
                prepares.append(elapsed)
            messages.append(assistant)
            messages.append(results)
            result_chars += sum(len(str(b.get("content", ""))) for b in results["content"])
            if i + 1 in marks:
                ordered = sorted(times)
                # A MemoryStore writes nothing to disk: its files are reported as -1.
                files, size = _disk(root) if store_kind != "memory" else (-1, 0)
                points.append(
                    LongPoint(
                        engine=engine,
                        store=store_kind,
                        window=window,
                        turns=i + 1,
                        p50_ms=ordered[len(ordered) // 2] * 1000,
                        p99_ms=ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
                        dumps_ratio=statistics.median(prepares)
                        / max(1e-9, statistics.median(dumps)),
                        rss_mb=_rss_mb(),
                        gc_max_ms=max(pauses, default=0.0),
                        files=files,
                        bytes_written=size / max(1, result_chars),
                        view_messages=len(messages) - 2,
                    )
                )
                times, dumps, prepares, pauses[:] = [], [], [], []
        gc.callbacks.remove(on_gc)
        close = getattr(compactor.store, "close", None)
        if callable(close):
            close()
    return points


def cold(engine: str, store_kind: str, messages: int) -> ColdPoint:
    """One prepare on a fresh compactor given an N-message history."""
    history: list[Any] = []
    for assistant, results, request in turns(messages // 2):
        if not history:
            history = [{"role": "user", "content": request}]
        history += [assistant, results]
    history = history[: messages if messages % 2 else messages - 1]
    size = len(json.dumps(history)) / 1e6
    with tempfile.TemporaryDirectory() as tmp:
        compactor = _compactor(engine, store_kind, 200_000, Path(tmp))
        t0 = time.perf_counter()
        compactor.prepare(history, str(history[0]["content"]))
        seconds = time.perf_counter() - t0
        close = getattr(compactor.store, "close", None)
        if callable(close):
            close()
    return ColdPoint(engine, store_kind, len(history), size, seconds)


def _in_process(config: dict[str, Any]) -> list[dict[str, Any]]:
    if config["kind"] == "loop":
        found = loop(config["engine"], config["store"], config["window"], config["marks"])
        return [asdict(p) for p in found]
    return [asdict(cold(config["engine"], config["store"], config["messages"]))]


def _subprocess(config: dict[str, Any]) -> list[dict[str, Any]]:
    out = subprocess.run(
        [sys.executable, "-m", "context_compact.bench.longrun", json.dumps(config)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"long-run measurement {config} failed: {out.stderr.strip()[-2000:]}")
    rows: list[dict[str, Any]] = json.loads(out.stdout)
    return rows


def configs(quick: bool = False, stores: Sequence[str] = ("sqlite",)) -> list[dict[str, Any]]:
    marks = list(QUICK_MARKS if quick else MARKS)
    cold_n = QUICK_COLD if quick else COLD
    out: list[dict[str, Any]] = []
    for store in stores:
        for window in WINDOWS:
            out.append(
                {
                    "kind": "loop",
                    "engine": "default",
                    "store": store,
                    "window": window,
                    "marks": marks,
                }
            )
        out.append({"kind": "cold", "engine": "default", "store": store, "messages": cold_n})
    for window in WINDOWS:
        out.append(
            {"kind": "loop", "engine": "seed", "store": "memory", "window": window, "marks": marks}
        )
    out.append({"kind": "cold", "engine": "seed", "store": "memory", "messages": cold_n})
    return out


def measure_long(
    quick: bool = False,
    stores: Sequence[str] = ("sqlite",),
    on_step: Callable[[str], None] | None = None,
) -> tuple[list[LongPoint], list[ColdPoint]]:
    loops: list[LongPoint] = []
    colds: list[ColdPoint] = []
    for config in configs(quick, stores):
        for row in _subprocess(config):
            if config["kind"] == "loop":
                loops.append(LongPoint(**row))
            else:
                colds.append(ColdPoint(**row))
        if on_step is not None:
            on_step(f"{config['kind']} {config['engine']} {config['store']}")
    return loops, colds


def _short(n: int) -> str:
    return f"{n / 1000:g}k" if n >= 1000 else str(n)


def render_long(loops: Sequence[LongPoint], colds: Sequence[ColdPoint], console: Any) -> None:
    """Two tables that fit 80 columns: the loop marks, then the cold starts."""
    from rich import box
    from rich.table import Table

    table = Table(
        title="Long sessions: prepare per turn in the SDK docs' loop (times in ms, RSS in MB)",
        title_justify="left",
        caption="÷json: prepare over json.dumps(view); B/B: bytes on disk per result byte; "
        "the seed runs on a MemoryStore (its transcripts would fill the disk), whose contents "
        "make its RSS meaningless: not shown",
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    heads = ("policy", "store", "window", "turns", "p50", "p99", "÷json", "RSS", "gc")
    stores = {"sqlite": "sql", "memory": "mem", "files": "file"}
    for name in (*heads, "files", "B/B"):
        table.add_column(name, justify="left" if name in heads[:2] else "right", no_wrap=True)
    for p in loops:
        table.add_row(
            p.engine,
            stores.get(p.store, p.store),
            _short(p.window),
            _short(p.turns),
            f"{p.p50_ms:.2f}",
            f"{p.p99_ms:.1f}",
            f"{p.dumps_ratio:.2f}",
            "-" if p.files < 0 else f"{p.rss_mb:.0f}",
            f"{p.gc_max_ms:.0f}",
            "-" if p.files < 0 else f"{p.files:,}",
            "-" if p.files < 0 else f"{p.bytes_written:.1f}",
        )
    console.print(table)
    cold_table = Table(
        title="Cold start: one prepare over a whole history",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    for name in ("engine", "store", "messages", "history MB", "seconds"):
        cold_table.add_column(name, justify="left" if name in ("engine", "store") else "right")
    for c in colds:
        cold_table.add_row(
            c.engine, c.store, f"{c.messages:,}", f"{c.history_mb:.1f}", f"{c.seconds:.2f}"
        )
    console.print(cold_table)


if __name__ == "__main__":
    print(json.dumps(_in_process(json.loads(sys.argv[1]))))
