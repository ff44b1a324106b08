"""What a cold start's parts cost, one at a time: the figures behind the README's "Cold start"
note (issue 19).

    python benchmarks/cold_parts.py [--messages 19999] [--store file|sqlite|both]

First each part alone, with ``time.perf_counter``, on the bench's history (``suite.Chunks``, the
same as ``bench --scaling``'s cold start): validating it (``check``; the JSON check as it walks
a clean message now and as its detailed walk, the only one before), each message's content key,
each message's count (its content's JSON and the estimate). Then one cold start of a fresh
``Compactor`` on that history, with the time spent inside the journal append, the archive, the
recognizer and the logging of each message (wall time, nested: they do not add up), against
the floor measured in the same run: one serialization (``dumps``), one hash (BLAKE2b) and one
durable write (write + fsync) of the whole history.
"""

from __future__ import annotations

import argparse
import collections
import functools
import hashlib
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from context_compact import Compactor, invariants
from context_compact.keys import Recognizer, content_key
from context_compact.messages import clone
from context_compact.session.durable import SessionJournal
from context_compact.session.state import SessionState
from context_compact.sizing import TokenCounter
from context_compact.store.codec import dumps
from context_compact.testing.fakes import BenchSummarizer
from context_compact_bench.suite import REQUEST, Chunks, make_policy, make_store


def timed(label: str, run: Callable[[], object]) -> None:
    began = time.perf_counter()
    run()
    print(f"  {label:<44} {time.perf_counter() - began:7.3f} s")


def wrap(owner: Any, name: str, spent: collections.Counter[str], label: str) -> None:
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - began

    setattr(owner, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=19_999)
    parser.add_argument("--store", default="both", choices=("file", "sqlite", "both"))
    args = parser.parse_args()
    turns = (args.messages - 1) // 2
    chunks = Chunks(tempfile.mkdtemp(prefix="cold-parts-"), 1_000)
    chunks.ensure(turns)
    history: list[Any] = [{"role": "user", "content": REQUEST}]
    for turn in chunks.turns(turns):
        history += [turn.assistant, turn.results]
    print(f"{len(history):,} messages, each part alone:")
    timed("validation (check)", lambda: invariants.check(history))
    timed(
        "  its JSON check, the walk of a clean message",
        lambda: [invariants._clean(m, 0) for m in history],
    )
    timed(
        "  its JSON check, the detailed walk",
        lambda: [invariants._first_violation(m, i) for i, m in enumerate(history)],
    )
    timed("content keys (sorted JSON, hash)", lambda: [content_key(m) for m in history])
    timed("the log's private copies (clone)", lambda: [clone(m) for m in history])
    counter = TokenCounter()
    timed("counts (content JSON, estimate)", lambda: [counter.sized(m) for m in history])

    floor = measure_floor(history)
    stores = ("file", "sqlite") if args.store == "both" else (args.store,)
    spent: collections.Counter[str] = collections.Counter()
    wrap(SessionJournal, "commit", spent, "journal append (records, chain, write)")
    wrap(Recognizer, "match", spent, "recognizing the history (keys)")
    wrap(Recognizer, "keys", spent, "recognizing the history (keys)")  # the new ones' keys
    wrap(SessionState, "add_message", spent, "logging each message (count, view)")
    for kind in stores:
        spent.clear()
        store = make_store(kind, Path(tempfile.mkdtemp(prefix="cold-parts-store-")))
        wrap(store, "save_messages", spent, "archive of the summarized prefix")
        compactor = Compactor(make_policy("default", 12_500), store, BenchSummarizer())
        began = time.perf_counter()
        compactor.prepare(history, REQUEST)
        total = time.perf_counter() - began
        store.close()
        print(f"one cold start on a {kind} store: {total:.3f} s = {total / floor:.2f}x the floor")
        for label, seconds in spent.most_common():
            print(f"  {label:<44} {seconds:7.3f} s")


def measure_floor(history: list[Any]) -> float:
    """The least a cold start must do with the history, timed in this run: one
    serialization, one hash and one durable write (fsync) of it."""
    began = time.perf_counter()
    data = dumps(history).encode("ascii")
    encoded = time.perf_counter()
    hashlib.blake2b(data, digest_size=16).hexdigest()
    hashed = time.perf_counter()
    with tempfile.NamedTemporaryFile(prefix="cold-floor-") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    wrote = time.perf_counter()
    floor = wrote - began
    print(
        f"the floor ({len(data) / 1e6:.1f} MB of JSON): {floor:.3f} s = serialization "
        f"{encoded - began:.3f} + hash {hashed - encoded:.3f} + durable write {wrote - hashed:.3f}"
    )
    return floor


if __name__ == "__main__":
    main()
