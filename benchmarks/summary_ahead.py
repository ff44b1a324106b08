"""How long the agent waits on summary turns, summaries made ahead or not.

A ``--steps``-step synthetic coding loop at ``--limit`` tokens, with a summarizer that takes
``--summary-seconds`` per call (a sleep, then ``BenchSummarizer``) and ``--model-seconds`` of
simulated model time between calls. Per mode it reports, over the turns whose ``prepare``
applied a summary: the wall time spent in ``prepare``, the summarizer's time for those
summaries, and their ratio (the goal: at most 0.2x with summaries made ahead; ~1x when the
summary is made at the trigger); plus how many summaries, summarizer calls (one made ahead
and voided counts too), turns that rewrote history, invalid views (``check``) and planted
facts lost (``bench.reach``).

Modes: ``inline`` (``summarize_ahead=False``), ``ahead`` (the default with a model
summarizer), ``ahead-async`` (the same loop under asyncio, ``Compactor.aprepare``).

    PYTHONPATH=src python benchmarks/summary_ahead.py [--steps 300] [--limit 12500]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass
from typing import Any

from context_compact import Compactor, MemoryStore, Policy, check
from context_compact.summary import SummaryRequest
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.reach import reach
from context_compact.testing.workload import Workload, synthetic_session
from context_compact_bench.report import markdown_table

REWRITES = ("summarize", "clear_old_results")


class Slow:
    """A model summarizer's latency around the bench's deterministic summary."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.inner = BenchSummarizer()
        self.calls = 0

    def summarize(self, ask: SummaryRequest) -> str:
        self.calls += 1
        time.sleep(self.seconds)
        return self.inner.summarize(ask)


@dataclass
class Tally:
    summary_turns: int = 0
    made_ahead: int = 0
    rewrite_turns: int = 0
    prepare_seconds: float = 0.0
    waited_seconds: float = 0.0
    invalid: int = 0

    def add(self, compactor: Compactor, before: int, seconds: float, view: list[Any]) -> None:
        self.invalid += check(view) != []
        events = compactor.events[before:]
        self.rewrite_turns += any(e.stage in REWRITES for e in events)
        summaries = [e for e in events if e.stage == "summarize"]
        if summaries:
            self.summary_turns += 1
            self.prepare_seconds += seconds
        for e in summaries:
            self.made_ahead += bool(e.timing and e.timing["ahead"])
            self.waited_seconds += float(e.timing["waited"]) if e.timing else 0.0


def setup(ahead: bool, args: argparse.Namespace) -> tuple[Compactor, Slow, MemoryStore]:
    store = MemoryStore("/memory")
    summarizer = Slow(args.summary_seconds)
    # Made ahead is the default with a model summarizer: only inline says so.
    knobs = {} if ahead else {"summarize_ahead": False}
    policy = Policy.default(context_limit=args.limit, **knobs)
    return Compactor(policy, store, summarizer), summarizer, store


def run_sync(ahead: bool, workload: Workload, args: argparse.Namespace) -> dict[str, Any]:
    compactor, summarizer, store = setup(ahead, args)
    tally = Tally()
    messages: list[Any] = [{"role": "user", "content": workload.request}]
    for turn in workload.turns:
        before, started = len(compactor.events), time.perf_counter()
        view = compactor.prepare(messages, workload.request)
        tally.add(compactor, before, time.perf_counter() - started, view)
        time.sleep(args.model_seconds)  # the model answers
        messages = [*view, turn.assistant, turn.results]
    compactor.record(messages)  # the last step too: its facts are then in view, not lost
    return row("ahead" if ahead else "inline", compactor, summarizer, store, tally, workload)


async def run_async(workload: Workload, args: argparse.Namespace) -> dict[str, Any]:
    compactor, summarizer, store = setup(True, args)
    tally = Tally()
    messages: list[Any] = [{"role": "user", "content": workload.request}]
    for turn in workload.turns:
        before, started = len(compactor.events), time.perf_counter()
        view = await compactor.aprepare(messages, workload.request)
        tally.add(compactor, before, time.perf_counter() - started, view)
        await asyncio.sleep(args.model_seconds)
        messages = [*view, turn.assistant, turn.results]
    await compactor.arecord(messages)
    return row("ahead-async", compactor, summarizer, store, tally, workload)


def row(
    mode: str,
    compactor: Compactor,
    summarizer: Slow,
    store: MemoryStore,
    tally: Tally,
    workload: Workload,
) -> dict[str, Any]:
    summarizer_seconds = tally.summary_turns * summarizer.seconds
    given = [fact for turn in workload.turns for fact in turn.facts]
    lost = reach(compactor.view(), store, "/memory", given).lost
    ratio = tally.prepare_seconds / summarizer_seconds if summarizer_seconds else 0.0
    return {
        "mode": mode,
        "summary turns": tally.summary_turns,
        "made ahead": tally.made_ahead,
        "summarizer calls": summarizer.calls,
        "rewrite turns": tally.rewrite_turns,
        "prepare s (summary turns)": f"{tally.prepare_seconds:.2f}",
        "waited s": f"{tally.waited_seconds:.2f}",
        "summarizer s": f"{summarizer_seconds:.2f}",
        "ratio": f"{ratio:.3f}x",
        "invalid views": tally.invalid,
        "lost": lost,
    }


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--limit", type=int, default=12_500)
    parser.add_argument("--summary-seconds", type=float, default=0.5)
    parser.add_argument("--model-seconds", type=float, default=0.25)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    workload = synthetic_session(args.steps, seed=args.seed)
    rows = [
        run_sync(False, workload, args),
        run_sync(True, workload, args),
        asyncio.run(run_async(workload, args)),
    ]
    table = markdown_table(list(rows[0]), ([r[h] for h in rows[0]] for r in rows))
    print(table)
    return table


if __name__ == "__main__":
    main()
