"""How often the default policy rewrites earlier history, and at how many summaries.

The workloads the cache-stability goal is stated on: synthetic 300-turn sessions (seeds 0-3)
at 12,500 and 25,000 tokens, and the recorded sessions of tests/data/trajectories at 12,500
(summed), each replayed through the default and the seed preset as ``context-compact bench``
replays them. Prints a markdown table: rewrite turns, summary calls, cost as a share of the
seed's on the same workload (Claude Sonnet 4.5 list prices, as the bench), results lost.

    python benchmarks/policy_cadence.py [--seeds 0,1,2,3] [--budgets 12500,25000] [--no-real]
                                        [--payoff 0.58]

``--payoff`` sets ``session.cadence.SUMMARY_PAYOFF`` (when a summary comes with a clearing)
for the run, to see what it trades.
"""

from __future__ import annotations

import argparse

from context_compact.session import cadence
from context_compact.testing.script import Script, as_script
from context_compact.testing.workload import synthetic_session
from context_compact_bench.pricing import Pricing
from context_compact_bench.report import markdown_table
from context_compact_bench.run import BenchConfig, BenchRow, real_scripts, run_one


def pair(script: Script, budget: int, pricing: Pricing) -> tuple[BenchRow, BenchRow]:
    default, _ = run_one("default", script, budget, 0, pricing)
    seed, _ = run_one("seed", script, budget, 0, pricing)
    return default, seed


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seeds", default="0,1,2,3")
    parser.add_argument("--budgets", default="12500,25000")
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--no-real", action="store_true")
    parser.add_argument("--payoff", type=float, default=cadence.SUMMARY_PAYOFF)
    args = parser.parse_args(argv)
    cadence.SUMMARY_PAYOFF = args.payoff
    pricing = Pricing()
    rows = []
    for budget in (int(b) for b in args.budgets.split(",")):
        for seed in (int(s) for s in args.seeds.split(",")):
            script = as_script(synthetic_session(args.turns, seed=seed))
            default, base = pair(script, budget, pricing)
            rows.append(
                (
                    f"synthetic {args.turns} turns, seed {seed}",
                    f"{budget:,}",
                    f"{default.rewrite_turns} of {default.turns}",
                    default.summary_calls,
                    f"{default.cost_usd / base.cost_usd:.3f}x",
                    default.lost,
                )
            )
    if not args.no_real:
        scripts = real_scripts(BenchConfig(), [])
        pairs = [pair(s, 12_500, pricing) for s in scripts]
        turns = sum(d.turns for d, _ in pairs)
        rewrites = sum(d.rewrite_turns for d, _ in pairs)
        cost = sum(d.cost_usd for d, _ in pairs) / sum(b.cost_usd for _, b in pairs)
        rows.append(
            (
                f"{len(scripts)} recorded sessions, summed",
                "12,500",
                f"{rewrites} of {turns} ({rewrites / turns:.1%})",
                sum(d.summary_calls for d, _ in pairs),
                f"{cost:.3f}x",
                sum(d.lost for d, _ in pairs),
            )
        )
    table = markdown_table(
        ("workload", "tokens", "rewrite turns", "summary calls", "cost vs seed", "lost"), rows
    )
    print(table)
    return table


if __name__ == "__main__":
    main()
