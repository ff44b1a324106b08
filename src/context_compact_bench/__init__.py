"""The bench: every context strategy replayed and priced side by side.

    from context_compact_bench import BenchConfig, run_bench
    report = run_bench(BenchConfig.quick())

``context_compact_bench.command.bench`` is the ``context-compact bench`` click command.
The bench registers its peer engines with the registry when it builds them
(``strategies.register_peers``); a library user's ``Policy.named("codex")`` loads them
through the registry's entry point (pyproject's ``context_compact.policies``).
"""

from .run import BenchConfig, BenchReport, BenchRow, default_trajectories, run_bench
from .strategies import register_peers

__all__ = [
    "BenchConfig",
    "BenchReport",
    "BenchRow",
    "default_trajectories",
    "register_peers",
    "run_bench",
]
