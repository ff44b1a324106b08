"""The fleet benchmark: worker processes on one shared store, one of them killed and resumed.

``context-compact bench --load --store URL`` runs, for the store ``URL`` names (PostgreSQL
for a fleet) and then for SQLite on the same machine, in the same run:

1. ``workers`` (8) processes, each driving ``sessions`` (100) sessions at once for ``turns``
   (200) turns (the load benchmark's loop, ``load.py``: ``aprepare`` on worker threads, a
   synthetic coding session each, at a ``budget``-token window so they compact); each
   process has a root of its own (its local cache of the files the views name).
2. Worker 0 is killed with SIGKILL once it has made ``kill_at`` of its ``prepare`` calls:
   mid-turn for the sessions it drives at once.
3. Another process, with yet another root, resumes every session of worker 0: it opens the
   session by its id (``fleet-<n>``; a dead writer's lease is taken over), counts the turns
   the log holds and drives the rest.

Then every session is checked from a fresh store, with an empty root of its own: its log
holds exactly the messages its driver meant to send, in order (nothing lost, nothing twice,
no other session's); a fresh ``Compactor(session=ID)`` rebuilds the view the driver got
last; and every file that view names is ``issued`` and readable there. The report gives
``prepare`` p50/p99/max (ms, inside the call) and calls per second over the run, per store.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from context_compact.compactor import Compactor, Item
from context_compact.errors import StoreUnavailable
from context_compact.messages import Message
from context_compact.session.records import logged_messages
from context_compact.store import Store, store_from_url
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session

from .load import SessionRun, _stats, _TimedCompactor, digest, policy

# A path the view names: under some root, in the store's layout, ending in its extension
# (a path clipped inside a summary's text is not a reference).
_NAMED = re.compile(
    r"(/[A-Za-z0-9._/-]*?/\.(?:task_outputs|transcripts)/[A-Za-z0-9._/-]+?"
    r"\.(?:txt|jsonl|md|png|jpg|gif|webp|pdf|bin))(?![A-Za-z0-9._/-])"
)
_calls = [0]  # prepare calls made in this process (the parent kills worker 0 by it)
_retries = [0]  # calls the store refused (StoreUnavailable) and the driver made again
RETRIES = 5


@dataclass(frozen=True)
class FleetConfig:
    workers: int = 8
    """Worker processes writing at once."""
    sessions: int = 100
    """Sessions each worker drives at once."""
    turns: int = 200
    """Tool turns per session."""
    budget: int = 12_500
    """Context window of every session, in tokens."""
    kill_at: float = 0.5
    """Share of worker 0's prepare calls after which it is killed."""

    @classmethod
    def quick(cls, **overrides: Any) -> FleetConfig:
        return replace(cls(workers=2, sessions=5, turns=20), **overrides)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Counted(_TimedCompactor):
    def prepare(self, messages: list[Item], active_request: str) -> list[Item]:
        try:
            return super().prepare(messages, active_request)
        finally:
            _calls[0] += 1


def session_id(number: int) -> str:
    return f"fleet-{number}"


async def _drive(number: int, store: Store, config: FleetConfig) -> SessionRun:
    """Drive session ``number`` from where its log stands (nothing: from the start)."""
    workload = await asyncio.to_thread(synthetic_session, config.turns, number)
    request = f"{workload.request} (session {number})"
    sid = session_id(number)
    compactor = await asyncio.to_thread(
        _Counted, policy(config.budget), store, BenchSummarizer(), session=sid
    )
    compactor.inside = []
    records = await asyncio.to_thread(lambda: list(store.records(sid)))
    logged = sum(1 for _ in logged_messages(records))
    done = max(0, (logged - 1) // 2)  # the request, then two messages a turn
    if logged and logged != 1 + 2 * done:
        raise RuntimeError(f"session {sid}: {logged} messages logged, not whole turns")
    sent: list[Message] = [{"role": "user", "content": request}]
    for turn in workload.turns:
        sent += [turn.assistant, turn.results]
    view: list[Message] = compactor.view() if logged else []
    if not logged:
        view = await _prepare(compactor, sent[:1], request)
    for step in workload.turns[done:]:
        view = await _prepare(compactor, [*view, step.assistant, step.results], request)
    return SessionRun(
        number, sid, digest(sent), digest(view), len(compactor.events), compactor.inside
    )


async def _prepare(compactor: Compactor, messages: list[Message], request: str) -> list[Message]:
    """``aprepare``, retried as an application would when the store refused the write (its
    records are kept for the next call); counted in ``_retries``."""
    for attempt in range(RETRIES):
        try:
            return await compactor.aprepare(messages, request)
        except StoreUnavailable:
            if attempt == RETRIES - 1:
                raise
            _retries[0] += 1
            await asyncio.sleep(0.1 * (attempt + 1))
    raise AssertionError("unreachable")


def drive(numbers: Sequence[int], url: str, root: Path, config: FleetConfig) -> list[SessionRun]:
    async def main() -> list[SessionRun]:
        return list(await asyncio.gather(*(_drive(n, store, config) for n in numbers)))

    store = store_from_url(url, root=root)
    try:
        return asyncio.run(main())
    finally:
        store.close()


def _child(spec: str) -> None:
    given = json.loads(spec)
    config = FleetConfig(**given["config"])

    def report() -> None:
        while True:
            print(f"calls {_calls[0]}", file=sys.stderr, flush=True)
            time.sleep(0.02)

    if given["report"]:
        threading.Thread(target=report, daemon=True).start()
    runs = drive(given["numbers"], given["url"], Path(given["root"]), config)
    json.dump({"runs": [asdict(run) for run in runs], "retries": _retries[0]}, sys.stdout)


def _start(
    url: str, root: Path, numbers: Sequence[int], config: FleetConfig, report: bool = False
) -> Any:
    spec = json.dumps(
        {
            "url": url,
            "root": str(root),
            "numbers": list(numbers),
            "config": config.as_dict(),
            "report": report,
        }
    )
    return subprocess.Popen(
        [sys.executable, "-m", "context_compact_bench.fleet", spec],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )


def _finish(child: Any) -> tuple[list[SessionRun], int, str | None]:
    """A worker's runs and retries, or why it failed (a finding of the run, not a crash)."""
    out, err = child.communicate()
    if child.returncode != 0:
        lines = [line for line in err.splitlines() if not line.startswith("calls ")]
        return [], 0, lines[-1] if lines else f"exit {child.returncode}"
    done = json.loads(out)
    return [SessionRun(**run) for run in done["runs"]], int(done["retries"]), None


def _kill_when(child: Any, calls: int) -> int:
    """SIGKILL ``child`` once it reports ``calls`` prepare calls; the count it had reached."""
    seen = 0
    for line in child.stderr:
        if line.startswith("calls "):
            seen = int(line.split()[1])
            if seen >= calls:
                break
    child.send_signal(signal.SIGKILL)
    child.communicate()
    return seen


def run_store(
    url: str, where: Path, config: FleetConfig, say: Callable[[str], None]
) -> dict[str, Any]:
    """The three steps and the checks on the store ``url`` (see the module docstring)."""
    # A worker of a fleet has a root of its own; on one machine (SQLite) they share one.
    fleet = url.startswith("postgres")

    def root(name: str) -> Path:
        return where / name if fleet else where / "workdir"

    store_from_url(url, root=root("setup")).close()  # the schema, once, before the race
    per = config.sessions
    numbers = [list(range(k * per, (k + 1) * per)) for k in range(config.workers)]
    started = time.perf_counter()
    children = [
        _start(url, root(f"worker-{k}"), numbers[k], config, report=k == 0)
        for k in range(config.workers)
    ]
    per_worker = config.sessions * (config.turns + 1)
    killed_at = _kill_when(children[0], max(1, int(per_worker * config.kill_at)))
    say(f"worker 0 killed with SIGKILL after {killed_at} of {per_worker} prepare calls")
    resumer = _start(url, root("resumer"), numbers[0], config)
    runs: list[SessionRun] = []
    retries = 0
    failures = []
    for child in [*children[1:], resumer]:
        done, retried, failure = _finish(child)
        runs += done
        retries += retried
        if failure is not None:
            failures.append(failure[:300])
    wall = time.perf_counter() - started
    say("checking every session from a fresh store" + (" with an empty root" if fleet else ""))
    checks = verify(url, root("checker"), runs, config)
    inside = [t for run in runs for t in run.inside_ms]
    calls = killed_at + len(inside)
    return {
        "store": url.split(":", 1)[0],
        "calls": calls,
        "wall_s": round(wall, 2),
        "calls_per_s": round(calls / wall, 1) if wall else 0.0,
        "prepare_ms": _stats(inside),
        "killed_after_calls": killed_at,
        "retried_calls": retries,
        "failed_workers": failures,
        "sessions_expected": config.workers * config.sessions,
        "compactions": sum(run.compactions for run in runs),
        **checks,
    }


def verify(url: str, root: Path, runs: Sequence[SessionRun], config: FleetConfig) -> dict[str, Any]:
    store = store_from_url(url, root=root)
    replayed = resumed = files = unreadable = 0
    bad: list[str] = []
    try:
        for run in runs:
            logged = [r.message for r in logged_messages(store.records(run.session))]
            if digest(logged) == run.sent:
                replayed += 1
            else:
                bad.append(
                    f"{run.session}: log differs from what was sent ({len(logged)} messages)"
                )
            view = Compactor(
                policy(config.budget), store, BenchSummarizer(), session=run.session
            ).view()
            if digest(view) == run.view:
                resumed += 1
            else:
                bad.append(f"{run.session}: resumed view differs")
            for path in sorted(set(_NAMED.findall(json.dumps(view)))):
                files += 1
                try:
                    assert store.issued(path)
                    store.read_bytes(path)
                except (AssertionError, KeyError, OSError, ValueError) as error:
                    unreadable += 1
                    bad.append(f"{run.session}: {path} unreadable here: {error!r}")
    finally:
        store.close()
    return {
        "sessions": len(runs),
        "replayed": replayed,
        "resumed": resumed,
        "files_named": files,
        "files_unreadable": unreadable,
        "problems": bad[:20],
    }


def run_fleet(
    config: FleetConfig,
    url: str,
    directory: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The fleet on ``url``, then on SQLite in the same run. On PostgreSQL the run gets a
    schema of its own (``cc_bench_<hex>``, whatever the URL names), dropped afterwards."""
    say = progress or (lambda _: None)
    with tempfile.TemporaryDirectory(prefix="cc-fleet-") as scratch:
        where = Path(directory or scratch)
        results = []
        schema = f"cc_bench_{uuid.uuid4().hex[:12]}"
        given = _with_schema(url, schema) if url.startswith("postgres") else url
        try:
            for name, target in [("given", given), ("sqlite", f"sqlite:///{where}/sqlite/f.db")]:
                size = f"{config.workers} x {config.sessions} sessions x {config.turns} turns"
                say(f"{size} on the {name} store ({target.split(':', 1)[0]})")
                results.append(run_store(target, where / name, config, say))
        finally:
            if given != url:
                _drop_schema(url, schema)
    return {"config": config.as_dict(), "schema": schema, "stores": results}


def _with_schema(url: str, schema: str) -> str:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "schema"]
    return parts._replace(query=urlencode([*query, ("schema", schema)])).geturl()


def _drop_schema(url: str, schema: str) -> None:
    import psycopg

    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "schema"]
    with psycopg.connect(parts._replace(query=urlencode(query)).geturl(), autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def render_fleet(data: dict[str, Any], console: Any) -> None:
    from rich import box
    from rich.table import Table

    config = data["config"]
    table = Table(
        title="fleet: worker processes on one store, one killed and resumed",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("store")
    for column in ("calls", "calls/s", "p50 ms", "p99 ms", "max ms", "compact"):
        table.add_column(column, justify="right")
    for row in data["stores"]:
        inside = row["prepare_ms"]
        table.add_row(
            row["store"],
            f"{row['calls']:,}",
            f"{row['calls_per_s']:,.0f}",
            f"{inside['p50']:.1f}",
            f"{inside['p99']:.1f}",
            f"{inside['max']:.1f}",
            f"{row['compactions']:,}",
        )
    console.print(table)
    for row in data["stores"]:
        console.print(
            f"{row['store']}: worker 0 killed after {row['killed_after_calls']:,} calls; "
            f"log = what was sent {row['replayed']}/{row['sessions_expected']}; resumed view "
            f"{row['resumed']}/{row['sessions_expected']}; files named {row['files_named']:,}, "
            f"unreadable from a fresh root {row['files_unreadable']}",
            highlight=False,
            markup=False,
        )
        if row["retried_calls"]:
            console.print(
                f"{row['store']}: {row['retried_calls']:,} calls refused by the store "
                "(StoreUnavailable) and made again",
                highlight=False,
                markup=False,
            )
        for failure in row["failed_workers"]:
            console.print(f"{row['store']}: a worker failed: {failure}", style="red", markup=False)
        for problem in row["problems"]:
            console.print(problem, style="red", markup=False, highlight=False)
    console.print(
        f"{config['workers']} workers x {config['sessions']} sessions x {config['turns']} turns "
        f"at a {config['budget']:,}-token window; p50/p99/max: time inside prepare.",
        highlight=False,
    )


if __name__ == "__main__":
    _child(sys.argv[1])
