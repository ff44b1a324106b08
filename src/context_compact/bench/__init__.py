"""The bench: every context strategy replayed and priced side by side.

    from context_compact.bench import BenchConfig, run_bench
    report = run_bench(BenchConfig.quick())

``context_compact.bench.command.bench`` is the ``context-compact bench`` click command.
"""

from .run import BenchConfig, BenchReport, BenchRow, default_trajectories, run_bench

__all__ = ["BenchConfig", "BenchReport", "BenchRow", "default_trajectories", "run_bench"]
