"""What a bench run is asked to do: its strategies, budgets, workloads (synthetic seeds, the
recorded sessions, long turns) and probes, as one frozen ``BenchConfig``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from context_compact.testing.trajectories import ENV_TRAJECTORIES as ENV_TRAJECTORIES
from context_compact.testing.trajectories import default_trajectories

from .answerer import AnswererConfig
from .longturn import BUDGETS as LONG_TURN_BUDGETS
from .pricing import Pricing
from .strategies import NAMES

DEFAULT_BUDGET = 12_500


@dataclass(frozen=True)
class BenchConfig:
    strategies: tuple[str, ...] = NAMES
    budget: int = DEFAULT_BUDGET
    real_budget: int | None = None
    synthetic: tuple[tuple[int, int], ...] = ((300, 0), (300, 1), (300, 2), (1_000, 0))
    overhead_tokens: int = 0
    trajectories: Path | None = field(default_factory=default_trajectories)
    real: bool = True
    max_sessions: int | None = None
    scaling_sizes: tuple[int, ...] = (100, 1_000, 5_000, 20_000)
    scaling_samples: int = 20
    scaling_repeats: int = 3
    pricing: Pricing = field(default_factory=Pricing)
    long_turn: int = 0
    """Steps of the long-turn workload (0: not run)."""
    long_turn_budgets: tuple[int, ...] = LONG_TURN_BUDGETS
    probes: bool = False
    """Judge probes (``probing``) at every call where content leaves the view."""
    answerer: AnswererConfig | None = None
    """With ``probes``: also ask a model each probe (``answerer``)."""

    @classmethod
    def quick(cls, **overrides: Any) -> BenchConfig:
        """Fewer turns, three real sessions, small scaling sizes: well under a minute."""
        base = cls(
            synthetic=((120, 0),),
            max_sessions=3,
            scaling_sizes=(100, 1_000, 2_000),
            scaling_samples=10,
            scaling_repeats=2,
        )
        return replace(base, **overrides)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["trajectories"] = str(self.trajectories) if self.trajectories else None
        out["pricing"] = self.pricing.as_dict()
        return out
