"""The bench: every context strategy replayed and priced side by side.

    from context_compact.bench import BenchConfig, run_bench
    report = run_bench(BenchConfig.quick())

``context_compact.bench.command.bench`` is the ``context-compact bench`` click command.
Importing this package registers the bench's peer engines with the registry
(``strategies.register_peers``): ``Policy.named("codex")`` works from then on.
"""

from .run import BenchConfig, BenchReport, BenchRow, default_trajectories, run_bench
from .strategies import register_peers

register_peers()

__all__ = [
    "BenchConfig",
    "BenchReport",
    "BenchRow",
    "default_trajectories",
    "register_peers",
    "run_bench",
]
