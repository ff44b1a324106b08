"""Issue 19's goals, read off one scaling-suite run: the default against the seed, like for like.

``goals(data)`` turns the suite's JSON (``suite.run_suite``) into one row per measure, window
and store:

* ``p99``: ``prepare``'s p99 (ms) over the turns of ``config.p99_span`` (the last 1,000 of
  20,000), the default's and the seed's on the same turns of the same workload, in the same
  run; goal: at most ``P99_MS`` and at most the seed's.
* ``cold``: one ``prepare`` on a fresh Compactor over the cold history (seconds, the median of
  the runs); goal: at most ``COLD_S`` and at most the seed's.
* ``rss``: the default's resident-memory growth (MB) between the checkpoints of each of
  ``config.rss_spans``; goal: at most ``RSS_MB``. The seed's is shown beside it.

The machines these run on are shared and noisy, so the ratio to the seed, measured minutes
apart in the same run, is the figure to compare across runs; the absolute goals hold only on
an idle machine. A measure whose checkpoints the run did not reach has no row (a ``--turns``
run, a ``--quick`` one measures the same spans at a tenth of the sizes).
"""

from __future__ import annotations

from typing import Any

P99_MS = 5.0
COLD_S = 1.0
RSS_MB = 20.0


def _point(run: dict[str, Any], turns: int) -> dict[str, Any] | None:
    return next((p for p in run.get("points", []) if p["turns"] == turns), None)


def _runs(data: dict[str, Any], key: str) -> dict[tuple[str, int, str], dict[str, Any]]:
    return {
        (r["engine"], r["window"], r["store"]): r for r in data.get(key, []) if "error" not in r
    }


def _row(
    measure: str,
    span: str,
    window: int,
    store: str,
    ours: float,
    seed: float | None,
    limit: float,
    beat_seed: bool,
) -> dict[str, Any]:
    ratio = ours / seed if seed else None
    met = ours <= limit and (not beat_seed or seed is None or ours <= seed)
    goal = f"<= {limit:g}" + (" and <= seed" if beat_seed else "")
    return {
        "measure": measure,
        "span": span,
        "window": window,
        "store": store,
        "default": ours,
        "seed": seed,
        "ratio": None if ratio is None else round(ratio, 3),
        "goal": goal,
        "met": met,
    }


def _previous(checkpoints: list[int], turns: int) -> int | None:
    before = [c for c in checkpoints if c < turns]
    return max(before) if before else None


def goals(data: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per measure, window and store (see the module docstring)."""
    config = data.get("config", {})
    checkpoints = sorted(config.get("checkpoints", []))
    loops, cold = _runs(data, "loops"), _runs(data, "cold")
    rows: list[dict[str, Any]] = []
    first, last = config.get("p99_span") or (0, 0)
    # The p99 row covers the turns after ``first`` only if no other checkpoint lies between.
    p99_ok = last in checkpoints and _previous(checkpoints, last) == first
    for (engine, window, store), run in loops.items():
        if engine != "default":
            continue
        seed_run = loops.get(("seed", window, store))
        if p99_ok:
            ours = _point(run, last)
            theirs = _point(seed_run, last) if seed_run else None
            if ours is not None:
                rows.append(
                    _row(
                        "p99 ms",
                        f"turns {first + 1:,}-{last:,}",
                        window,
                        store,
                        ours["p99_ms"],
                        theirs["p99_ms"] if theirs else None,
                        P99_MS,
                        True,
                    )
                )
        for lo, hi in config.get("rss_spans") or ():
            a, b = _point(run, lo), _point(run, hi)
            if a is None or b is None or a.get("rss_mb") is None or b.get("rss_mb") is None:
                continue
            seed_growth = None
            if seed_run:
                sa, sb = _point(seed_run, lo), _point(seed_run, hi)
                if sa and sb and sa.get("rss_mb") is not None and sb.get("rss_mb") is not None:
                    seed_growth = round(sb["rss_mb"] - sa["rss_mb"], 1)
            growth = round(b["rss_mb"] - a["rss_mb"], 1)
            row = _row(
                "RSS growth MB", f"turns {lo:,}-{hi:,}", window, store, growth, None, RSS_MB, False
            )
            row["seed"] = seed_growth
            rows.append(row)
    for (engine, window, store), run in cold.items():
        if engine != "default":
            continue
        seed_run = cold.get(("seed", window, store))
        rows.append(
            _row(
                "cold start s",
                f"{run['messages']:,} messages",
                window,
                store,
                run["seconds"],
                seed_run["seconds"] if seed_run else None,
                COLD_S,
                True,
            )
        )
    order = {"p99 ms": 0, "cold start s": 1, "RSS growth MB": 2}
    rows.sort(key=lambda r: (order[r["measure"]], r["window"], r["store"], r["span"]))
    return rows


__all__ = ["COLD_S", "P99_MS", "RSS_MB", "goals"]
