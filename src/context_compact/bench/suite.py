"""The scaling suite: how ``prepare``'s time, memory and files grow with a session's length.

``run_suite`` (``context-compact bench --scaling``) measures an engine
the way an agent uses it, like for like:

* *loop*: one Compactor driven turn by turn as the Anthropic SDK docs write a tool loop::

      messages = compactor.prepare(messages, request)
      messages.append(assistant)
      messages.append(tool_results)

  At each checkpoint (1,000, 10,000 and 50,000 turns) it reports, for the turns since the
  previous one: ``prepare``'s p50, p99 and max; the median ratio of ``prepare`` to a
  ``json.dumps`` of the view it returned, both timed on the same turns (every
  ``dump_every``-th: serializing the view is the least any caller does with it); the
  longest garbage-collection pause inside ``prepare`` and the full (generation 2)
  collections there; and, at the checkpoint, resident memory (VmRSS, and the peak VmHWM),
  the files and bytes under the store's root, the bytes the process wrote and the bytes
  of tool results it was given.
* *cold*: a fresh Compactor handed a ~20,000-message history in one call (and the time of
  the next turn after it).
* *goals* (``goals.py``): the default against the seed on the same turns of the same run,
  as ratios (p99 over the last 1,000 of 20,000 turns, cold start), and its memory growth.

Both run for the default (``Policy.default(context_limit=W)``) and the seed
(``Policy.seed(context_limit=4 * W)``: the seed measures characters, about four a token),
at each window W (12,500 and 200,000 tokens), on each store (FileStore, SqliteStore when the
package has one; MemoryStore on request). Every configuration
runs in a subprocess of its own (``child``, given the run as JSON), so its memory
figures are its own; they run one at a time unless ``jobs`` says otherwise, so timings do not
compete for cores. Only the public API is used (``Compactor``, ``Policy`` and the stores), so
the suite measures whichever engine the package ships.

The workload is ``workload.synthetic_session`` in chunks of ``chunk_turns`` turns (chunk k
from seed k), generated once per suite into a cache directory; the summarizer is
``fakes.BenchSummarizer``. A run holds one chunk at a time, so the caller's side of memory
is the view plus one chunk, as an agent holds only what it sends.
"""

from __future__ import annotations

import gc
import json
import math
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from importlib import import_module
from pathlib import Path
from typing import Any

from ..compactor import Compactor
from ..policy import Policy
from ..store import FileStore, MemoryStore
from ..testing.fakes import BenchSummarizer
from ..testing.workload import Turn, synthetic_session
from .goals import goals

Message = dict[str, Any]
REQUEST = synthetic_session(0).request
STORES = ("file", "sqlite", "memory")
ENGINES = ("default", "seed")

# -- the suite -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SuiteConfig:
    checkpoints: tuple[int, ...] = (1_000, 10_000, 19_000, 20_000, 25_000, 50_000)
    """Turns at which loop runs report (the statistics cover the turns since the last one).
    19,000, 20,000 and 25,000 are there for ``goals``: p99 over the last 1,000 of 20,000
    turns, RSS growth from 10,000 to 20,000 and from 25,000 to 50,000 turns."""
    windows: tuple[int, ...] = (12_500, 200_000)
    """Context windows, in tokens."""
    stores: tuple[str, ...] = ("file", "sqlite")
    """Stores the default runs on (``file``, ``sqlite``, ``memory``); missing ones skipped."""
    seed_loop: bool = True
    """Also drive the seed turn by turn, on each store the default runs on (like for like)."""
    cold_messages: int = 20_000
    """History length of the cold start (made odd, to end on tool results); 0 skips it."""
    cold_repeats: int = 3
    """Cold starts per configuration, each in a fresh process (the median is reported)."""
    dump_every: int = 17
    """Time ``json.dumps(view)`` on every n-th turn (a prime: engines and stores act on
    cycles of 2^k calls, and a sample that always lands on one would bias the ratio)."""
    chunk_turns: int = 1_000
    jobs: int = 1
    """Configurations run at once (each in its own process)."""
    isolate: bool = True
    """Run each configuration in a subprocess (False: in this process, for tests)."""
    p99_span: tuple[int, int] = (19_000, 20_000)
    """``goals``: p99 of the turns after the first checkpoint up to the second."""
    rss_spans: tuple[tuple[int, int], ...] = ((10_000, 20_000), (25_000, 50_000))
    """``goals``: resident-memory growth between these checkpoints."""

    @classmethod
    def quick(cls, **overrides: Any) -> SuiteConfig:
        """The same measures at a tenth of the sizes, one cold start each: a few minutes on
        two cores."""
        base = cls(
            checkpoints=(100, 1_000, 1_900, 2_000, 2_500, 5_000),
            cold_messages=2_000,
            cold_repeats=1,
            dump_every=5,
            p99_span=(1_900, 2_000),
            rss_spans=((1_000, 2_000), (2_500, 5_000)),
        )
        return replace(base, **overrides)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


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


def available_stores() -> tuple[str, ...]:
    """The stores this package has (SqliteStore is newer than the others)."""
    has_sqlite = hasattr(import_module("context_compact.store"), "SqliteStore")
    return tuple(s for s in STORES if s != "sqlite" or has_sqlite)


def plan(config: SuiteConfig, chunks: str) -> tuple[list[RunSpec], list[str]]:
    """The runs of a suite, and the stores it skips (with the reason)."""
    have = available_stores()
    stores = [s for s in config.stores if s in have]
    skipped = [f"store {s!r}: not in this package" for s in config.stores if s not in have]
    base = RunSpec(
        "loop", "default", 0, "file", (), 0, config.dump_every, config.chunk_turns, chunks
    )
    checkpoints = tuple(sorted(set(config.checkpoints)))
    runs: list[RunSpec] = []
    for window in config.windows:
        if checkpoints:
            loops = [("default", store) for store in stores]
            if config.seed_loop:
                loops += [("seed", store) for store in stores]
            runs += [
                replace(base, engine=engine, window=window, store=store, checkpoints=checkpoints)
                for engine, store in loops
            ]
        if config.cold_messages > 0:
            size = config.cold_messages - (1 - config.cold_messages % 2)
            runs += [
                replace(
                    base,
                    kind="cold",
                    engine=engine,
                    window=window,
                    store=store,
                    messages=max(3, size),
                )
                for store in stores
                for engine in ENGINES
                for _ in range(max(1, config.cold_repeats))
            ]
    return runs, skipped


Progress = Callable[[int, int, str], None]


def run_suite(
    config: SuiteConfig | None = None, progress: Progress | None = None
) -> dict[str, Any]:
    """Run every configuration of ``config``; the JSON-ready results."""
    from .run import machine_info

    config = config or SuiteConfig()
    started = time.perf_counter()
    chunks = tempfile.mkdtemp(prefix="context-compact-scaling-")
    try:
        runs, skipped = plan(config, chunks)
        longest = max(
            [max(r.checkpoints) for r in runs if r.kind == "loop"]
            + [(r.messages - 1) // 2 + 1 for r in runs if r.kind == "cold"],
            default=0,
        )
        # Short suites (tests) need no thousand-turn chunk.
        chunk_turns = max(1, min(config.chunk_turns, longest))
        runs = [replace(r, chunk_turns=chunk_turns) for r in runs]
        # Made before any run, so no run times the generator or counts its writes.
        Chunks(chunks, chunk_turns).ensure(
            longest,
            lambda k, n: progress(0, len(runs), f"workload chunk {k}/{n}") if progress else None,
        )
        done = 0

        def measure(spec: RunSpec) -> dict[str, Any]:
            def step(turns: int, total: int) -> None:
                if progress:
                    progress(done, len(runs), f"{spec.label}: {turns:,}/{total:,}")

            try:
                result = run_isolated(spec, step) if config.isolate else execute(spec, step)
            except Exception as exc:  # one failing configuration must not hide the others
                result = {"error": f"{type(exc).__name__}: {exc}"}
            return {**_spec_dict(spec), **result}

        results: list[dict[str, Any]] = []
        with ThreadPoolExecutor(max_workers=max(1, config.jobs)) as pool:
            for result in pool.map(measure, runs):
                done += 1
                results.append(result)
                if progress:
                    progress(done, len(runs), str(result.get("label", "")))
    finally:
        shutil.rmtree(chunks, ignore_errors=True)
    machine = machine_info()
    duration = time.perf_counter() - started
    machine["duration_s"] = round(duration, 1)
    data = {
        "kind": "scaling",
        "config": config.as_dict(),
        "loops": [r for r in results if r["kind"] == "loop"],
        "cold": _cold_summary([r for r in results if r["kind"] == "cold"]),
        "skipped": skipped,
        "machine": machine,
        "duration_s": round(duration, 1),
    }
    data["goals"] = goals(data)
    return data


def _spec_dict(spec: RunSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": spec.kind, "engine": spec.engine, "window": spec.window}
    out["store"] = spec.store
    if spec.kind == "cold":
        out["messages"] = spec.messages
    out["label"] = spec.label
    return out


def _cold_summary(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per cold configuration: the run with the median time, and every time."""
    groups: dict[tuple[str, int, str, int], list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault((r["engine"], r["window"], r["store"], r["messages"]), []).append(r)
    rows = []
    for group in groups.values():
        good = sorted((r for r in group if "error" not in r), key=lambda r: r["seconds"])
        row = dict(good[len(good) // 2] if good else group[0])
        row["all_seconds"] = [r["seconds"] for r in good]
        row["repeats"] = len(group)
        rows.append(row)
    return rows


# Not ``-m context_compact.bench.suite``: the package imports this module first, and runpy
# would warn about running a second copy of it.
CHILD = "import sys; from context_compact.bench.suite import child; sys.exit(child(sys.argv[1:]))"


def run_isolated(spec: RunSpec, step: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """``execute(spec)`` in a fresh interpreter: its memory figures are its own."""
    command = [sys.executable, "-c", CHILD, json.dumps(asdict(spec))]
    result: dict[str, Any] | None = None
    log: list[str] = []
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    ) as child:
        assert child.stdout is not None
        for line in child.stdout:
            message = _protocol(line)
            if message is None:
                log.append(line.rstrip())
            elif "progress" in message and step:
                step(message["progress"], message["total"])
            elif "result" in message:
                result = message["result"]
        code = child.wait()
    if code != 0 or result is None:
        tail = " | ".join(log[-5:])
        raise RuntimeError(f"child exited with {code}: {tail or 'no output'}")
    return result


def _protocol(line: str) -> dict[str, Any] | None:
    if not line.startswith('{"'):
        return None
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


# -- one configuration ----------------------------------------------------------------------


def execute(spec: RunSpec, step: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Measure one configuration in this process."""
    root = Path(tempfile.mkdtemp(prefix="context-compact-store-"))
    try:
        if spec.kind == "cold":
            return _cold_start(spec, root)
        return _loop_run(spec, root, step)
    finally:
        shutil.rmtree(root, ignore_errors=True)


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


class Chunks:
    """The synthetic session in chunks, generated once and cached (zlib'd pickles)."""

    def __init__(self, directory: str, chunk_turns: int) -> None:
        self.directory = Path(directory or tempfile.gettempdir())
        self.chunk_turns = max(1, chunk_turns)

    def _path(self, k: int) -> Path:
        # Pickles name their classes' module: a chunk cached before ``Turn`` moved to
        # ``testing.workload`` (another checkout may still read it) keeps its own name.
        return self.directory / f"chunk-{self.chunk_turns}-{k}.testing.pickle.z"

    def chunk(self, k: int) -> tuple[Turn, ...]:
        try:
            turns: tuple[Turn, ...] = pickle.loads(zlib.decompress(self._path(k).read_bytes()))
            return turns
        except (OSError, zlib.error, pickle.UnpicklingError, EOFError, ImportError, AttributeError):
            return self._generate(k)  # absent, damaged, or of classes this version lacks

    def _generate(self, k: int) -> tuple[Turn, ...]:
        path = self._path(k)
        turns = synthetic_session(self.chunk_turns, seed=k).turns
        # Written aside and renamed: runs in parallel may make the same chunk at once.
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        partial.write_bytes(zlib.compress(pickle.dumps(turns, pickle.HIGHEST_PROTOCOL), 1))
        os.replace(partial, path)
        return turns

    def ensure(self, count: int, step: Callable[[int, int], None] | None = None) -> None:
        """Generate the chunks ``count`` turns need that are not cached yet."""
        needed = math.ceil(count / self.chunk_turns)
        for k in range(needed):
            if not self._path(k).exists():
                self._generate(k)
            if step:
                step(k + 1, needed)

    def turns(self, count: int) -> Iterator[Turn]:
        for k in range(math.ceil(count / self.chunk_turns)):
            chunk = self.chunk(k)
            yield from chunk[: count - k * self.chunk_turns]
            del chunk


class GcWatch:
    """Garbage-collection pauses that land inside ``prepare`` (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.inside = False
        self.full = 0
        self.max_s = 0.0
        self.total_s = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif self.inside:
            pause = time.perf_counter() - self._started
            self.total_s += pause
            self.max_s = max(self.max_s, pause)
            self.full += info.get("generation") == 2

    def take(self) -> dict[str, Any]:
        out = {"gc_full": self.full, "gc_max_ms": _ms(self.max_s), "gc_ms": _ms(self.total_s)}
        self.full, self.max_s, self.total_s = 0, 0.0, 0.0
        return out


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile: a value that was observed."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)] if ordered else 0.0


def memory() -> dict[str, float | None]:
    """Resident memory now and at its peak, MB (Linux ``/proc``; None elsewhere)."""
    out: dict[str, float | None] = {"rss_mb": None, "hwm_mb": None}
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    out["rss_mb" if key == "VmRSS" else "hwm_mb"] = round(
                        int(value.split()[0]) / 1024, 1
                    )
    except OSError:
        pass
    return out


def written_bytes() -> int | None:
    """Bytes this process has handed to ``write`` (``wchar`` of ``/proc/self/io``)."""
    try:
        with open("/proc/self/io", encoding="ascii") as io:
            for line in io:
                if line.startswith("wchar:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def store_footprint(store: Any, root: Path) -> dict[str, Any]:
    """Files and bytes the store keeps: under its root on disk, or in a MemoryStore's dict."""
    files = getattr(store, "files", None)
    if isinstance(files, dict):
        return {"files": len(files), "disk_bytes": sum(map(len, files.values()))}
    count, size = 0, 0
    for directory, _, names in os.walk(root):
        for name in names:
            try:
                size += os.path.getsize(os.path.join(directory, name))
            except OSError:
                continue
            count += 1
    return {"files": count, "disk_bytes": size}


def _result_bytes(turn: Turn) -> int:
    return sum(len(str(block.get("content", ""))) for block in turn.results["content"])


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


def child(argv: Sequence[str]) -> int:
    """A child process: measure the RunSpec given as JSON, print progress and the result."""
    fields = json.loads(argv[0])
    spec = RunSpec(**{**fields, "checkpoints": tuple(fields.get("checkpoints", ()))})

    def step(turns: int, total: int) -> None:
        print(json.dumps({"progress": turns, "total": total}), flush=True)

    result = execute(spec, step)
    print(json.dumps({"result": result}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(child(sys.argv[1:]))
