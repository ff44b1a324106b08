"""The load benchmark: many sessions at once on one SqliteStore, then checked for corruption.

``context-compact bench --load`` runs two phases, each on a fresh database:

* **one process**: ``sessions`` sessions (1,000) driven at once with ``Compactor.aprepare``
  from one asyncio loop, the calls running on ``workers`` threads, every session writing to
  the same ``SqliteStore``;
* **processes**: ``processes`` (8) processes, each driving ``sessions_per_process`` sessions
  the same way, all writing to one database file.

Every session is the SDK docs' loop over its own synthetic coding session
(``workload.synthetic_session``, seed = its number, so no two sessions hold the same text):
``view = await compactor.aprepare([*view, assistant, results], request)`` for ``turns``
turns, at a ``budget``-token window, so sessions compact while the others write.

Then, for each phase: ``PRAGMA integrity_check`` must say ``ok``; each session's journal must
replay to what it was sent (its logged messages, in order, equal the messages the driver
passed) and a fresh ``Compactor(..., session=ID)`` on a new connection must rebuild exactly
the view the live one returned last. The report gives, per phase, the time inside
``prepare`` (p50, p99, max: the engine, its lock and the shared store's lock under
contention), the time an ``aprepare`` awaited (queueing for a worker thread included),
calls per second, compactions, and the database's size.

Latencies are wall-clock ``perf_counter`` in milliseconds; percentiles are nearest-rank.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from context_compact.compactor import Compactor, Item
from context_compact.messages import Message
from context_compact.policy import Policy
from context_compact.session.records import logged_messages
from context_compact.store import SqliteStore
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session


@dataclass(frozen=True)
class LoadConfig:
    sessions: int = 1_000
    """Sessions driven at once in one process."""
    processes: int = 8
    """Processes sharing one database in the second phase."""
    sessions_per_process: int = 25
    """Sessions each of those processes drives at once."""
    turns: int = 10
    """Tool turns per session (an assistant message and its results each)."""
    budget: int = 12_500
    """Context window of every session, in tokens (small enough that sessions compact)."""
    workers: int | None = None
    """Threads ``aprepare`` runs on, per process (None: asyncio's default executor,
    ``min(32, cores + 4)``, what an application gets without choosing)."""

    @classmethod
    def quick(cls, **overrides: Any) -> LoadConfig:
        return replace(cls(sessions=100, processes=2, sessions_per_process=20), **overrides)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SessionRun:
    """One session as its driver saw it: what it sent and what it got back last."""

    number: int
    session: str
    sent: str  # digest of every message passed, in order
    view: str  # digest of the view returned last
    compactions: int
    inside_ms: list[float] = field(default_factory=list)
    awaited_ms: list[float] = field(default_factory=list)


def digest(messages: Sequence[Any]) -> str:
    text = json.dumps(list(messages), sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def policy(budget: int) -> Any:
    return Policy.default(context_limit=budget)


class _TimedCompactor(Compactor):
    """Times each ``prepare`` where it runs (on the worker thread), lock waits included."""

    inside: list[float]

    def prepare(self, messages: list[Item], active_request: str) -> list[Item]:
        started = time.perf_counter()
        try:
            return super().prepare(messages, active_request)
        finally:
            self.inside.append((time.perf_counter() - started) * 1000)


async def _session(number: int, store: SqliteStore, config: LoadConfig) -> SessionRun:
    workload = await asyncio.to_thread(synthetic_session, config.turns, number)
    request = f"{workload.request} (session {number})"
    compactor = _TimedCompactor(policy(config.budget), store, BenchSummarizer())
    compactor.inside = []
    awaited: list[float] = []
    sent: list[Message] = [{"role": "user", "content": request}]
    view: list[Message] = []
    pending = list(sent)
    for step in [None, *workload.turns]:
        if step is not None:
            pending = [step.assistant, step.results]
            sent += pending
        started = time.perf_counter()
        view = await compactor.aprepare([*view, *pending], request)
        awaited.append((time.perf_counter() - started) * 1000)
    sid = compactor.session_id
    assert sid is not None
    return SessionRun(
        number, sid, digest(sent), digest(view), len(compactor.events), compactor.inside, awaited
    )


def drive(numbers: Sequence[int], db: Path, config: LoadConfig) -> tuple[list[SessionRun], float]:
    """Drive the sessions ``numbers`` at once on ``db``; their runs and the wall time (s)."""

    async def main() -> list[SessionRun]:
        if config.workers is not None:
            asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(config.workers))
        return list(await asyncio.gather(*(_session(n, store, config) for n in numbers)))

    store = SqliteStore(db)
    try:
        started = time.perf_counter()
        runs = asyncio.run(main())
        return runs, time.perf_counter() - started
    finally:
        store.close()


# -- checking ------------------------------------------------------------------------------


def integrity(db: Path) -> str:
    connection = sqlite3.connect(db)
    try:
        rows = connection.execute("PRAGMA integrity_check").fetchall()
    finally:
        connection.close()
    return "; ".join(str(row[0]) for row in rows)


def verify(db: Path, runs: Sequence[SessionRun], config: LoadConfig) -> dict[str, Any]:
    """Integrity, and each session replayed from a fresh connection against its driver."""
    store = SqliteStore(db)
    replayed = resumed = 0
    bad: list[str] = []
    try:
        for run in runs:
            name = f"session {run.number} ({run.session})"
            try:
                records = store.records(run.session)
                logged = [r.message for r in logged_messages(records)]
            except Exception as error:  # a damaged journal is a finding, not a crash
                logged = []
                bad.append(f"{name}: journal unreadable: {error!r}")
            if digest(logged) == run.sent:
                replayed += 1
            else:
                bad.append(f"{name}: log differs from what was sent")
            try:
                again = Compactor(
                    policy(config.budget), store, BenchSummarizer(), session=run.session
                )
                view = digest(again.view())
            except Exception as error:
                view = f"resume failed: {error!r}"
            if view == run.view:
                resumed += 1
            else:
                bad.append(f"{name}: resumed view differs ({view[:60]})")
    finally:
        store.close()
    return {
        "integrity_check": integrity(db),
        "sessions": len(runs),
        "replayed": replayed,
        "resumed": resumed,
        "problems": bad[:20],
    }


def percentile(values: Sequence[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * share // 1))  # nearest rank: ceil(n * share)
    return ordered[int(rank) - 1]


def summary(runs: Sequence[SessionRun], wall: float, db: Path) -> dict[str, Any]:
    inside = [t for run in runs for t in run.inside_ms]
    awaited = [t for run in runs for t in run.awaited_ms]
    size = sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))
    return {
        "calls": len(inside),
        "wall_s": round(wall, 2),
        "calls_per_s": round(len(inside) / wall, 1) if wall else 0.0,
        "prepare_ms": _stats(inside),
        "awaited_ms": _stats(awaited),
        "compactions": sum(run.compactions for run in runs),
        "db_bytes": size,
    }


def _stats(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50": round(percentile(values, 0.5), 2),
        "p99": round(percentile(values, 0.99), 2),
        "max": round(max(values, default=0.0), 2),
    }


# -- the phases ----------------------------------------------------------------------------

Progress = Callable[[str], None]


def run_load(
    config: LoadConfig, directory: Path | None = None, progress: Progress | None = None
) -> dict[str, Any]:
    """Both phases; each phase's figures and checks (see the module docstring)."""
    say = progress or (lambda _: None)
    with tempfile.TemporaryDirectory(prefix="cc-load-") as scratch:
        where = Path(directory or scratch)
        where.mkdir(parents=True, exist_ok=True)
        one = where / "one-process.db"
        say(f"{config.sessions} sessions in one process")
        runs, wall = drive(range(config.sessions), one, config)
        say("checking the one-process database")
        single = {**summary(runs, wall, one), **verify(one, runs, config)}
        shared = where / "processes.db"
        say(f"{config.processes} processes x {config.sessions_per_process} sessions")
        runs, wall = _drive_processes(shared, config)
        say("checking the shared database")
        multi = {**summary(runs, wall, shared), **verify(shared, runs, config)}
    return {"config": config.as_dict(), "one_process": single, "processes": multi}


def _drive_processes(db: Path, config: LoadConfig) -> tuple[list[SessionRun], float]:
    SqliteStore(db).close()  # create the schema once, before the writers race
    started = time.perf_counter()
    children = []
    per = config.sessions_per_process
    for k in range(config.processes):
        numbers = list(range(100_000 + k * per, 100_000 + (k + 1) * per))
        spec = json.dumps({"db": str(db), "numbers": numbers, "config": config.as_dict()})
        children.append(
            subprocess.Popen(
                [sys.executable, "-m", "context_compact_bench.load", spec],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, "PYTHONHASHSEED": "0"},
            )
        )
    runs: list[SessionRun] = []
    failures = []
    for child in children:
        out, err = child.communicate()
        if child.returncode != 0:
            failures.append(
                err.strip().splitlines()[-1] if err.strip() else f"exit {child.returncode}"
            )
            continue
        runs += [SessionRun(**r) for r in json.loads(out)]
    if failures:
        raise RuntimeError(f"load: {len(failures)} process(es) failed: {failures[0]}")
    return runs, time.perf_counter() - started


def _child(spec: str) -> None:
    given = json.loads(spec)
    config = LoadConfig(**given["config"])
    runs, _ = drive(given["numbers"], Path(given["db"]), config)
    json.dump([asdict(run) for run in runs], sys.stdout)


# -- the report ----------------------------------------------------------------------------


def render_load(data: dict[str, Any], console: Any) -> None:
    from rich import box
    from rich.table import Table

    config = data["config"]
    threads = config["workers"] or f"min(32, cores + 4) = {min(32, (os.cpu_count() or 1) + 4)}"
    table = Table(
        title="load: concurrent sessions on one SqliteStore",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("phase")
    # Short headers so the table fits 80 columns; the checks go on a line of their own.
    for column in ("sessions", "calls/s", "p50 ms", "p99 ms", "max ms", "wait p99", "compact"):
        table.add_column(column, justify="right")
    phases = (
        ("one_process", "1 proc"),
        ("processes", f"{config['processes']} procs"),
    )
    checks = []
    for key, label in phases:
        row = data[key]
        inside, sessions = row["prepare_ms"], row["sessions"]
        table.add_row(
            label,
            f"{sessions:,}",
            f"{row['calls_per_s']:,.0f}",
            f"{inside['p50']:.1f}",
            f"{inside['p99']:.1f}",
            f"{inside['max']:.1f}",
            f"{row['awaited_ms']['p99']:,.0f} ms",
            f"{row['compactions']:,}",
        )
        checks.append(
            f"{label}: integrity {row['integrity_check']}; replayed {row['replayed']}/"
            f"{sessions}; resumed {row['resumed']}/{sessions}"
        )
    console.print(table)
    for line in checks:
        console.print(line, highlight=False, markup=False)
    console.print(
        f"{config['turns']} turns a session at a {config['budget']:,}-token window, "
        f"aprepare on {threads} threads a process; p50/p99/max: the time inside prepare; "
        "wait p99: with the wait for a thread; compact: compaction events.",
        highlight=False,
    )
    for key, _ in phases:
        for problem in data[key]["problems"]:
            console.print(problem, style="red", markup=False, highlight=False)


if __name__ == "__main__":
    _child(sys.argv[1])
