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

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from importlib import import_module
from pathlib import Path
from typing import Any

from .goals import goals
from .measures import Chunks as Chunks
from .measures import _percentile as _percentile
from .measures import _result_bytes as _result_bytes
from .measures import written_bytes as written_bytes
from .suite_run import REQUEST as REQUEST
from .suite_run import STORES as STORES
from .suite_run import RunSpec as RunSpec
from .suite_run import _cold_start, _loop_run
from .suite_run import make_policy as make_policy
from .suite_run import make_store as make_store

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


# Not ``-m context_compact_bench.suite``: the package imports this module first, and runpy
# would warn about running a second copy of it.
CHILD = "import sys; from context_compact_bench.suite import child; sys.exit(child(sys.argv[1:]))"


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
