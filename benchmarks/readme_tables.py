"""Print the README's bench tables (markdown) from `context-compact bench --json` reports.

context-compact bench --json benchmarks/results/bench.json --chart benchmarks/results/bench.svg
context-compact bench --scaling --json benchmarks/results/scaling.json
context-compact bench --long-turn --json benchmarks/results/long_turn.json
python benchmarks/readme_tables.py benchmarks/results/bench.json benchmarks/results/scaling.json
python benchmarks/readme_tables.py benchmarks/results/long_turn.json

Each report is recognized by what it holds: the scaling suite's, the long-turn workload's
(``bench --long-turn``: rows of kind "long-turn"), or the bench's synthetic and real sessions.

The scaling suite's rows are like for like: the default and the seed each per turn in the same
loop on the same store (1k to 50k turns; memory and files too), each in one cold call, and the
goals of issue 19 as ratios of the default to the seed in that run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
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
            f"{r['user_kept']} / {r['user_messages']}",
            "" if r.get("summary_retention") is None else f"{r['summary_retention']:.0%}",
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
    "user words kept",
    "summary retention",
]


def loop_rows(scaling: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for run in scaling["loops"]:
        for p in run.get("points", []):
            results, written = p.get("result_bytes") or 0, p.get("written_bytes") or 0
            rows.append(
                [
                    run["engine"],
                    run["store"],
                    f"{run['window']:,}",
                    f"{p['turns']:,}",
                    f"{p['p50_ms']:.3f}",
                    f"{p['p99_ms']:.2f}",
                    f"{p['max_ms']:,.1f}",
                    f"{p['vs_dumps']:.2f}x" if p.get("vs_dumps") is not None else "",
                    f"{p['rss_mb']:,.0f}" if p.get("rss_mb") is not None else "",
                    f"{p['files']:,}",
                    f"{written / results:.1f}x" if results else "",
                ]
            )
    return rows


LOOP_HEADERS = [
    "engine",
    "store",
    "window",
    "turns",
    "p50 ms",
    "p99 ms",
    "max ms",
    "vs json.dumps(view)",
    "RSS MB",
    "files",
    "written / result bytes",
]


DIGITS = {"p99 ms": 2, "cold start s": 3, "RSS growth MB": 1}


def _figure(value: float | None, measure: str) -> str:
    return "" if value is None else f"{value:,.{DIGITS.get(measure, 2)}f}"


def print_scaling(path: str) -> None:
    scaling = json.loads(Path(path).read_text(encoding="utf-8"))
    print(
        "\nprepare() per turn in the SDK loop (p50/p99/max over the turns since the previous row)\n"
    )
    print(table(LOOP_HEADERS, loop_rows(scaling)))
    cold = scaling["cold"]
    if cold:
        print(
            f"\nCold start: a fresh Compactor, one prepare() of a "
            f"{cold[0]['messages']:,}-message history\n"
        )
        print(
            table(
                [
                    "engine",
                    "store",
                    "window",
                    "seconds (median)",
                    "next turn ms",
                    "RSS MB",
                    "files",
                ],
                [
                    [
                        r["engine"],
                        r["store"],
                        f"{r['window']:,}",
                        f"{r['seconds']:.3f}",
                        f"{r['next_ms']:.2f}" if r.get("next_ms") is not None else "",
                        f"{r['rss_mb']:,.0f}" if r.get("rss_mb") is not None else "",
                        f"{r['files']:,}",
                    ]
                    for r in cold
                    if "error" not in r
                ],
            )
        )
    goals = scaling.get("goals") or []
    if goals:
        print("\nGoals (issue 19): the default against the seed, same turns, same run\n")
        print(
            table(
                ["measure", "window", "store", "default", "seed", "default / seed", "goal", "met"],
                [
                    [
                        f"{g['measure']}, {g['span']}",
                        f"{g['window']:,}",
                        g["store"],
                        _figure(g["default"], g["measure"]),
                        _figure(g["seed"], g["measure"]),
                        "" if g["ratio"] is None else f"{g['ratio']:.2f}x",
                        g["goal"],
                        "yes" if g["met"] else "no",
                    ]
                    for g in goals
                ],
            )
        )
    m = scaling["machine"]
    print(
        f"\nscaling: {m['cpus']} CPUs, {m['machine']}, Python {m['python']}; "
        f"run {m['duration_s']:.0f} s"
    )


LONG_TURN_HEADERS = [
    "strategy",
    "window",
    "peak tokens",
    "calls over budget",
    "API refusals",
    "turns opened",
    "summary calls",
    "in view / recoverable / lost",
    "input tokens",
    "cache read",
    "cost $",
    "prepare p50 ms",
]


def long_turn_rows(results: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            r["strategy"],
            f"{r['budget']:,}",
            f"{r['peak_tokens']:,}",
            f"{r['over_budget_calls']:,}"
            + (
                f" (from call {r['overflow_turn']:,})" if r.get("overflow_turn") is not None else ""
            ),
            f"{r['api_refusals']:,}",
            f"{r['turn_starts']:,}",
            r["summary_calls"],
            f"{r['in_view']:,} / {r['recoverable']:,} / {r['lost']:,}",
            f"{r['total_input_tokens']:,}",
            f"{r['cache_read_share']:.0%}",
            f"{r['cost_usd']:.2f}",
            f"{r['p50_prepare_ms']:.3f}",
        ]
        for r in results
    ]


def print_long_turn(report: dict[str, Any]) -> None:
    rows = [r for r in report["results"] if r.get("kind") == "long-turn"]
    steps = report["config"]["long_turn"]
    print(f"One request, then {steps:,} tool steps, thinking on\n")
    print(table(LONG_TURN_HEADERS, long_turn_rows(rows)))
    for r in rows:
        if r.get("first_refusal") or r.get("error"):
            print(f"\n{r['strategy']} at {r['budget']:,}: {r.get('first_refusal') or r['error']}")
    m = report["machine"]
    print(
        f"\nmachine: {m['cpus']} CPUs, {m['machine']}, Python {m['python']}; "
        f"run {m['duration_s']:.0f} s"
    )


def main(path: str, scaling_path: str | None = None) -> None:
    report = json.loads(Path(path).read_text(encoding="utf-8"))
    if report.get("kind") == "scaling":
        print_scaling(path)
        return
    if any(r.get("kind") == "long-turn" for r in report["results"]):
        print_long_turn(report)
        if scaling_path:
            print_scaling(scaling_path)
        return
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
        f"\nmachine: {m['cpus']} CPUs, {m['machine']}, Python {m['python']}; "
        f"run {m['duration_s']:.0f} s"
    )
    if scaling_path:
        print_scaling(scaling_path)


if __name__ == "__main__":
    main(
        sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/bench.json",
        sys.argv[2] if len(sys.argv) > 2 else None,
    )
