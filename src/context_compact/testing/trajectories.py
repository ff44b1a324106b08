"""Where the recorded sessions are: the trajectory pack that replays, resumes and token
calibrations read (``context_compact.loaders`` reads the sessions in it).

    root = default_trajectories()      # a folder; it may not exist (a test then skips)

Invariant: the answer depends only on ``$CONTEXT_COMPACT_TRAJECTORIES`` and where this
checkout is, never on the working directory.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_TRAJECTORIES = "CONTEXT_COMPACT_TRAJECTORIES"


def default_trajectories() -> Path:
    """``$CONTEXT_COMPACT_TRAJECTORIES``, else the repository's copy of the recorded sessions
    (``tests/data/trajectories``), else ``shared/data/trajectories`` beside the repository."""
    env = os.environ.get(ENV_TRAJECTORIES)
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[3]  # src/context_compact/testing/ -> the checkout
    inside = repo / "tests/data/trajectories"
    return inside if inside.is_dir() else repo.parent / "shared/data/trajectories"
