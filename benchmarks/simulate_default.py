"""Issue 4's simulation: the seed's pipeline against the default policy, side by side.

A 300-turn synthetic coding session (seed 0) replayed through ``Policy.seed()`` and
``Policy.default(context_limit=12_500)`` at the same budget (12,500 tokens; the seed's
50,000 characters), no system-prompt overhead. Prints a markdown table:

* unreachable results: planted facts neither in the final view nor behind a reference the
  store issued;
* check() violations per turn;
* rewrite-turn share: calls whose request did not extend the previous one (cache broken);
* cache-weighted input cost (reads 0.1x, writes 1.25x, summary input 1x), default / seed;
* prepare p50.

    .venv/bin/python benchmarks/simulate_default.py [--turns 300] [--seed 0] [--budget 12500]
"""

from __future__ import annotations

import argparse

from context_compact_bench import BenchConfig, run_bench
from context_compact_bench.report import markdown_table


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=12_500)
    args = parser.parse_args(argv)
    config = BenchConfig(
        strategies=("seed", "default"),
        budget=args.budget,
        synthetic=((args.turns, args.seed),),
        real=False,
        scaling_sizes=(),
    )
    report = run_bench(config)
    workload = report.workloads()[0]
    seed, default = report.row("seed", workload), report.row("default", workload)
    calls = seed.turns + 1
    rows = []
    for r in (seed, default):
        rows.append(
            (
                r.strategy,
                f"{r.lost} of {r.needles}",
                f"{r.violations / calls:.3f}",
                f"{r.rewrite_turns} of {seed.turns} ({r.rewrite_turns / seed.turns:.0%})",
                f"{r.weighted_input:,.0f}",
                f"{r.weighted_input / seed.weighted_input:.3f}x",
                f"{r.cache_read_share:.0%}",
                f"{r.peak_tokens:,}",
                r.summary_calls,
                f"{r.p50_prepare_ms:.3f}",
            )
        )
    table = markdown_table(
        (
            "policy",
            "unreachable results",
            "check() violations / turn",
            "rewrite turns",
            "weighted input tokens",
            "cost vs seed",
            "cache read",
            "peak tokens",
            "summary calls",
            "prepare p50 ms",
        ),
        rows,
    )
    text = (
        f"{workload}, budget {args.budget:,} tokens (seed: {4 * args.budget:,} chars), "
        f"overhead 0\n\n{table}\n"
    )
    print(text)
    return text


if __name__ == "__main__":
    main()
