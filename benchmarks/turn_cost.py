"""``prepare``'s per-turn time against a ``json.dumps`` of the view it returns, at one window.

    python benchmarks/turn_cost.py --window 200000 --turns 1000 --stores file sqlite memory

The loop of ``bench --scaling`` (``suite._loop_run``: the SDK docs' loop over the suite's
synthetic session, ``BenchSummarizer``), one configuration after another in this process,
``json.dumps(view)`` timed on every ``--dump-every``-th turn right after the ``prepare`` that
returned it. Printed per store: ``prepare`` p50 and p99 (ms), the ``json.dumps`` p50, and
``vs_dumps``: the median over those turns of prepare time / dumps time (ratios within one
turn: the machine is shared and noisy). PostgreSQL is measured by the fleet bench instead.

``--without-copy-check`` measures what the check of the copies handed out costs: the loop
runs with ``Handout.copies`` replaced by one that reuses last call's copies unchecked (a
measurement only; the library never does this).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from context_compact.keys import same_prefix
from context_compact.messages import Message, clone
from context_compact.session import handout
from context_compact_bench.suite import RunSpec, _loop_run


def _unchecked(self: handout.Handout, messages: list[Message]) -> list[Message]:
    """``Handout.copies`` without the check that the copies reused still equal the engine's
    messages: what the caller edited in place would be handed out again."""
    n = same_prefix(messages, self._engine)
    out = self._copies if n == len(self._copies) else self._copies[:n]
    out.extend(clone(m) for m in messages[n:])
    self._engine, self._copies = list(messages), out
    return list(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=200_000)
    parser.add_argument("--turns", type=int, default=1_000)
    parser.add_argument("--stores", nargs="+", default=["file", "sqlite", "memory"])
    parser.add_argument("--dump-every", type=int, default=7)
    parser.add_argument("--without-copy-check", action="store_true")
    args = parser.parse_args()
    if args.without_copy_check:
        handout.Handout.copies = _unchecked  # type: ignore[method-assign]
    chunks = tempfile.mkdtemp(prefix="turn-cost-chunks-")
    for store in args.stores:
        spec = RunSpec(
            "loop",
            "default",
            args.window,
            store,
            checkpoints=(args.turns,),
            chunks=chunks,
            dump_every=args.dump_every,
        )
        point = _loop_run(spec, Path(tempfile.mkdtemp(prefix="turn-cost-")), None)["points"][-1]
        keys = ("p50_ms", "p99_ms", "dumps_p50_ms", "vs_dumps", "view_messages", "view_chars")
        row = {"store": store, "window": args.window, "turns": args.turns}
        print(json.dumps({**row, **{k: point[k] for k in keys}}), flush=True)


if __name__ == "__main__":
    main()
