"""``bench --real-peers``: our default, the real peers and their models, on the real sessions.

For every recorded session (``run.real_scripts``) at the real budget, the strategies are run one
after another on that session before the next (interleaved per workload, so machine noise hits
all alike): ``default``, each real peer that imports, and each bench model of a peer
(``MODELS``). Every one gets its own ``BenchSummarizer`` and the replay's one token counter.
A row: peak tokens sent, calls over the budget, weighted input (cache reads 0.1x, writes
1.25x, summary input 1x), rewrites, summary calls, results lost, the API refusals a real peer
retried after (OpenHands), and the time: the sum over calls of the peer's own hook (its
adapter's conversion excluded), of ``prepare`` for ours and the models; ``time_vs_ours`` is
that over the default's on the same session.

``checks`` compares each model with its real peer on the sessions both ran: a model is within
tolerance when its summary calls, rewrites and weighted input over all sessions are each within
``TOLERANCE`` of the real peer's (relative, or ``SLACK`` absolute for small counts).
OpenHands runs in a Python 3.12 worker (``worker.py``) when this interpreter cannot import it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import context_compact
import context_compact_bench
from context_compact.sizing import text_tokens
from context_compact.store.memory import MemoryStore
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.replay import Replay, replay
from context_compact.testing.script import Script

from ..strategies import Setup, build

ENV_PYTHON = "CONTEXT_COMPACT_PEERS_PYTHON"
REAL = (
    "openhands-condenser",
    "langchain-summarization",
    "langchain-context-editing",
    "llamaindex-summary-buffer",
)
# Each real peer's model in ``bench.strategies``.
MODELS = {
    "openhands-condenser": "openhands-summarizer",
    "langchain-summarization": "langchain-summarizer",
    "langchain-context-editing": "anthropic-clearing",
    "llamaindex-summary-buffer": "llamaindex-summary",
}
# The SDK prints a banner at import, and litellm under it fetches its model price map from the
# network unless told to use the copy it ships.
QUIET = {"OPENHANDS_SUPPRESS_BANNER": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
TOLERANCE = 0.15
SLACK = 3
LABELS = {
    "default": "our default",
    "openhands-condenser": "OpenHands (current default condenser)",
    "langchain-summarization": "LangChain SummarizationMiddleware",
    "langchain-context-editing": "LangChain ContextEditingMiddleware",
    "llamaindex-summary-buffer": "LlamaIndex ChatSummaryMemoryBuffer",
}


def peer(name: str, summarizer: Any, budget: int, system: str) -> Any:
    """The real peer ``name`` (ImportError when it is not installed here)."""
    if name == "openhands-condenser":
        from .openhands import OpenHandsCondenser

        return OpenHandsCondenser(summarizer, budget, system)
    if name == "llamaindex-summary-buffer":
        from .llamaindex import LlamaIndexSummaryBuffer

        return LlamaIndexSummaryBuffer(summarizer, budget)
    from .langchain import LangChainContextEditing, LangChainSummarization

    kind = LangChainSummarization if name == "langchain-summarization" else LangChainContextEditing
    return kind(summarizer, budget)


def row_of(
    name: str, result: Replay, summarizer: Any, ms: list[float], **extra: Any
) -> dict[str, Any]:
    return {
        "strategy": name,
        "workload": result.workload,
        "turns": result.turns,
        "peak_tokens": result.peak_tokens,
        "over_budget_calls": result.over_budget_calls,
        "weighted_input": result.weighted_input(),
        "rewrite_turns": result.rewrite_turns,
        "summary_calls": summarizer.calls,
        "summary_input_tokens": summarizer.input_tokens,
        "lost": result.lost,
        "time_ms": sum(ms),
        "error": result.error,
        **extra,
    }


def replay_peer(name: str, script: Script, budget: int) -> dict[str, Any]:
    summarizer = BenchSummarizer()
    impl = peer(name, summarizer, budget, script.system)
    result = replay(
        impl,
        script,
        overhead_tokens=text_tokens(script.system),
        window=budget,
        summarizer=summarizer,
    )
    return row_of(
        name,
        result,
        summarizer,
        impl.peer_ms,
        refusals=getattr(impl, "refusals", 0),
        version=impl.version,
    )


def replay_ours(name: str, script: Script, budget: int) -> dict[str, Any]:
    store = MemoryStore("/memory")
    summarizer = BenchSummarizer()
    overhead = text_tokens(script.system)
    impl = build(name, Setup(budget, store, summarizer, overhead))
    result = replay(
        impl,
        script,
        store=store,
        root="/memory",
        overhead_tokens=overhead,
        window=budget,
        summarizer=summarizer,
    )
    refusals = getattr(impl.engine, "refusals", 0)
    return row_of(name, result, summarizer, result.prepare_ms, refusals=refusals)


class Worker:
    """OpenHands in a Python 3.12 interpreter, one workload per request."""

    def __init__(self, python: str) -> None:
        # The folders holding this bench and the library it runs, wherever each is installed.
        homes = dict.fromkeys(
            str(Path(package.__file__ or "").resolve().parents[1])
            for package in (context_compact, context_compact_bench)
        )
        path = os.pathsep.join([*homes, os.environ.get("PYTHONPATH", "")])
        env = {**os.environ, "PYTHONPATH": path, **QUIET}
        self.process = subprocess.Popen(
            [python, "-m", "context_compact_bench.peers.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def run(self, name: str, trajectories: Path, workload: str, budget: int) -> dict[str, Any]:
        job = {
            "peer": name,
            "trajectories": str(trajectories),
            "workload": workload,
            "budget": budget,
        }
        return self.send(job)

    def run_synthetic(self, name: str, turns: int, seed: int, budget: int) -> dict[str, Any]:
        return self.send({"peer": name, "synthetic": [turns, seed], "budget": budget})

    def send(self, job: dict[str, Any]) -> dict[str, Any]:
        name = job["peer"]
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the {name} worker exited ({self.process.wait()})")
        row: dict[str, Any] = json.loads(line)
        return row

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)
        if self.process.stdout is not None:
            self.process.stdout.close()


def _in_worker(
    worker: Worker, name: str, script: Script, budget: int, trajectories: Path
) -> dict[str, Any]:
    return worker.run(name, trajectories, script.name, budget)


def _here(name: str, script: Script, budget: int, trajectories: Path) -> dict[str, Any]:
    return replay_peer(name, script, budget)


def _probe(python: str) -> str | None:
    """None when ``python`` can import openhands-sdk, else why not."""
    code = "import sys; assert sys.version_info >= (3, 12); import openhands.sdk"
    try:
        done = subprocess.run(
            [python, "-c", code],
            capture_output=True,
            timeout=120,
            check=False,
            env={**os.environ, **QUIET},
        )
    except OSError as error:
        return f"{python}: {error}"
    return None if done.returncode == 0 else f"{python} cannot import openhands-sdk on 3.12+"


def runners(
    python: str | None, skipped: list[str]
) -> tuple[dict[str, Callable[[Script, int, Path], dict[str, Any]]], list[Worker]]:
    """How each real peer runs here; ``skipped`` gets one line per peer that cannot."""
    out: dict[str, Callable[[Script, int, Path], dict[str, Any]]] = {}
    workers: list[Worker] = []
    for name in REAL:
        try:
            if name == "openhands-condenser":
                for key, value in QUIET.items():
                    os.environ.setdefault(key, value)
                import openhands.sdk  # noqa: F401
            elif name == "llamaindex-summary-buffer":
                import llama_index.core  # noqa: F401
            else:
                import langchain.agents.middleware  # noqa: F401
        except ImportError as error:
            if name == "openhands-condenser":
                python = python or os.environ.get(ENV_PYTHON)
                why = (
                    _probe(python)
                    if python
                    else f"openhands-sdk needs Python 3.12+ (this is {sys.version.split()[0]}); "
                    f"give one that has it with --peers-python or ${ENV_PYTHON}"
                )
                if why is None and python:
                    worker = Worker(python)
                    workers.append(worker)
                    out[name] = partial(_in_worker, worker, name)
                    continue
                skipped.append(f"{name}: skipped: {why}")
                continue
            skipped.append(
                f"{name}: skipped: not installed ({error}); "
                "pip install 'context-compact-bench[peers]'"
            )
            continue
        out[name] = partial(_here, name)
    return out, workers


def run_real_peers(
    config: Any, python: str | None = None, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Every session: ours, the real peers, the models; then totals, ratios and checks."""
    from ..run import real_scripts

    started = time.perf_counter()
    skipped: list[str] = []
    scripts = real_scripts(config, skipped)
    budget = config.real_budget or config.budget
    run, workers = runners(python, skipped)
    models = [MODELS[n] for n in REAL if n in run]
    rows: list[dict[str, Any]] = []
    try:
        for script in scripts:
            ours = replay_ours("default", script, budget)
            rows.append(ours)
            for name in [*run, *models]:
                if progress:
                    progress(f"{name} on {script.name}")
                if name in run:
                    row = run[name](script, budget, Path(str(config.trajectories)))
                    row.setdefault("strategy", name)
                    row.setdefault("workload", script.name)
                else:
                    row = replay_ours(name, script, budget)
                row["time_vs_ours"] = (
                    row.get("time_ms", 0.0) / ours["time_ms"] if ours["time_ms"] else None
                )
                rows.append(row)
    finally:
        for worker in workers:
            worker.close()
    versions = {r["strategy"]: r["version"] for r in rows if r.get("version")}
    totals = aggregate(rows)
    return {
        "budget": budget,
        "sessions": len(scripts),
        "versions": versions,
        "skipped": skipped,
        "totals": totals,
        "checks": checks(totals),
        "rows": rows,
        "duration_s": round(time.perf_counter() - started, 1),
    }


def aggregate(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names = list(dict.fromkeys(r["strategy"] for r in rows))
    ours = sum(r["time_ms"] for r in rows if r["strategy"] == "default")
    out = []
    for name in names:
        mine = [r for r in rows if r["strategy"] == name]
        total = {
            "strategy": name,
            "sessions": len(mine),
            "peak_tokens": max(r.get("peak_tokens", 0) for r in mine),
            **{
                k: sum(r.get(k) or 0 for r in mine)
                for k in (
                    "over_budget_calls",
                    "weighted_input",
                    "rewrite_turns",
                    "summary_calls",
                    "summary_input_tokens",
                    "lost",
                    "time_ms",
                    "refusals",
                )
            },
            "errors": [r["error"] for r in mine if r.get("error")],
        }
        total["time_vs_ours"] = total["time_ms"] / ours if ours else None
        out.append(total)
    return out


def _close(model: float, real: float) -> bool:
    return abs(model - real) <= max(SLACK, TOLERANCE * abs(real))


def checks(totals: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by = {t["strategy"]: t for t in totals}
    out = []
    for real, model in MODELS.items():
        if real not in by or model not in by:
            continue
        r, m = by[real], by[model]
        fields = ("summary_calls", "rewrite_turns", "weighted_input")
        within = {f: _close(m[f], r[f]) for f in fields}
        out.append(
            {
                "real": real,
                "model": model,
                "within_tolerance": all(within.values()),
                "fields": {f: {"model": m[f], "real": r[f], "within": within[f]} for f in fields},
                "tolerance": f"{TOLERANCE:.0%} (or {SLACK} absolute)",
            }
        )
    return out
