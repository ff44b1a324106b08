"""Print the README's bench tables (markdown) from a `context-compact bench --json` report.

context-compact bench --json benchmarks/results/bench.json --chart benchmarks/results/bench.svg
python benchmarks/readme_tables.py benchmarks/results/bench.json
"""

from __future__ import annotations

import json
import sys
from typing import Any


def table(headers: list[str], rows: list[list[Any]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def rows_of(results: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            r["strategy"],
            f"{r['peak_tokens']:,}",
            f"{r['total_input_tokens']:,}",
            f"{r['cache_read_share']:.0%}",
            f"{r['cost_usd']:.2f}",
            r["rewrite_turns"],
            r["summary_calls"],
            f"{r['in_view']} / {r['recoverable']} / {r['lost']}",
            r["over_budget_calls"],
            r["violations"],
            f"{r['p50_prepare_ms']:.3f}",
        ]
        for r in results
    ]


HEADERS = [
    "strategy",
    "peak tokens",
    "input tokens",
    "cache read",
    "cost $",
    "rewrite turns",
    "summary calls",
    "in view / recoverable / lost",
    "calls over budget",
    "check() violations",
    "prepare p50 ms",
]


def main(path: str) -> None:
    report = json.load(open(path, encoding="utf-8"))
    synthetic = [r for r in report["results"] if r["workload"] == "synthetic-300x0"]
    print(f"Synthetic, 300 turns, seed 0, budget {synthetic[0]['budget']:,} tokens\n")
    print(table(HEADERS, rows_of(synthetic)))
    real = report["aggregates"]["real"]
    print(f"\nReal recorded sessions ({real[0]['workload']}), summed\n")
    print(table(HEADERS, rows_of(real)))
    scaling: dict[int, dict[str, float]] = {}
    for row in report["scaling"]:
        scaling.setdefault(row["messages"], {})[row["strategy"]] = row["p50_ms"]
    print("\nprepare() p50 ms by history length, like for like\n")
    names = ["default loop", "seed loop", "default cold", "seed cold"]
    print(
        table(
            ["messages", *names],
            [
                [f"{n:,}", *(f"{v[name]:.3f}" if name in v else "" for name in names)]
                for n, v in sorted(scaling.items())
            ],
        )
    )
    m = report["machine"]
    print(
        f"\nmachine: {m['cpus']} CPUs, {m['machine']}, Python {m['python']}; run {m['duration_s']:.0f} s"
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/bench.json")
