"""Where ``prepare``'s time goes, part by part: CPU seconds inside each engine pass and store
write over a loop or one cold start (the profile behind the README's "Long sessions" notes).

    python benchmarks/turn_parts.py loop --store file --window 12500 --turns 3000
    python benchmarks/turn_parts.py cold --store file --window 12500 --messages 19999

Each part is timed with ``time.process_time`` (CPU of every thread: the summarizer runs on a
worker thread) by wrapping the function of that name; parts nest (``effects`` holds
``summary_text``, which holds the summarizer), so they do not add up. A part the engine no longer
has is listed as missing. cProfile gives the same ranking but inflates small generator-heavy
functions several times over; these timers do not. Same workload and summarizer as
``bench --scaling`` (``suite.Chunks``, ``BenchSummarizer``).
"""

from __future__ import annotations

import argparse
import collections
import functools
import importlib
import tempfile
import time
from pathlib import Path
from typing import Any

from context_compact import Compactor
from context_compact.testing.fakes import BenchSummarizer
from context_compact_bench.suite import REQUEST, Chunks, make_policy, make_store

PARTS = [
    ("context_compact.session.session", "Session", "sync"),
    ("context_compact.session.durable", "SessionJournal", "flush"),
    ("context_compact.session.engine", "SessionEngine", "_flush"),  # before the journal's split
    ("context_compact.session.planner", None, "summary_text"),
    ("context_compact.session.summarizing", "SummaryCaller", "text"),
    ("context_compact.session.state", "SessionState", "add_message"),
    ("context_compact.session.state", "SessionState", "apply"),
    ("context_compact.session.shown", "Shown", "reprefix"),
    ("context_compact.session.passes", None, "persist"),
    ("context_compact.session.passes", None, "clear"),
    ("context_compact.session.passes", None, "effects"),
    ("context_compact.session.summary", None, "plan"),
    ("context_compact.session.summary_plan", None, "plan"),  # its own callers (``projected``)
    ("context_compact.session.summary", None, "score"),
]
STORE_PARTS = ("append", "save_blob", "save_pack", "save_messages", "append_file")

spent: collections.Counter[str] = collections.Counter()
calls: collections.Counter[str] = collections.Counter()


def timed(owner: Any, name: str, label: str) -> bool:
    original = getattr(owner, name, None)
    if not callable(original):
        return False

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            spent[label] += time.process_time() - began
            calls[label] += 1

    setattr(owner, name, wrapper)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("kind", choices=("loop", "cold"))
    parser.add_argument("--store", default="file", choices=("file", "sqlite", "memory"))
    parser.add_argument("--window", type=int, default=12_500)
    parser.add_argument("--turns", type=int, default=3_000)
    parser.add_argument("--messages", type=int, default=19_999)
    args = parser.parse_args()
    missing = []
    for module, cls, name in PARTS:
        try:
            owner = importlib.import_module(module)
        except ModuleNotFoundError:
            owner = None
        owner = getattr(owner, cls, None) if cls else owner
        if owner is None or not timed(owner, name, name):
            missing.append(f"{module}.{cls + '.' if cls else ''}{name}")
    turns = args.turns if args.kind == "loop" else (args.messages - 1) // 2
    chunks = Chunks(tempfile.mkdtemp(prefix="turn-parts-"), 1_000)
    chunks.ensure(turns)
    store = make_store(args.store, Path(tempfile.mkdtemp(prefix="turn-parts-store-")))
    for name in STORE_PARTS:
        timed(store, name, f"store.{name}")
    compactor = Compactor(make_policy("default", args.window), store, BenchSummarizer())
    messages: list[Any] = [{"role": "user", "content": REQUEST}]
    total = 0.0
    if args.kind == "cold":
        for turn in chunks.turns(turns):
            messages += [turn.assistant, turn.results]
        began = time.process_time()
        compactor.prepare(messages, REQUEST)
        total = time.process_time() - began
    else:
        for turn in chunks.turns(turns):
            began = time.process_time()
            messages = compactor.prepare(messages, REQUEST)
            total += time.process_time() - began
            messages += [turn.assistant, turn.results]
    print(f"{args.kind} {args.store} window {args.window:,}: prepare CPU {total:.3f} s")
    for label, seconds in spent.most_common():
        per = seconds / calls[label] * 1000
        print(f"  {label:<20} {seconds:8.3f} s {calls[label]:7,} calls {per:8.3f} ms/call")
    for name in missing:
        print(f"  missing: {name}")


if __name__ == "__main__":
    main()
