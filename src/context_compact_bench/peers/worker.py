"""A peer run in another interpreter: ``python -m context_compact_bench.peers.worker``.

OpenHands' SDK needs Python 3.12+, the bench runs on 3.11+. The bench starts this worker
under a 3.12 interpreter that has ``openhands-sdk`` and this package, then sends one JSON line
per workload (``{"peer", "trajectories", "workload", "budget"}``, or ``"synthetic": [turns,
seed]`` for a generated session) and reads one JSON line back:
the replay's row (``run.peer_row``). The worker loads the recorded sessions once, with the
same loader as the bench, so both replay the same script.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any


def main() -> None:
    from ..run import BenchConfig, real_scripts
    from .run import replay_peer

    logging.disable(logging.WARNING)
    scripts: dict[str, Any] = {}
    loaded: set[str] = set()
    for line in sys.stdin:
        job = json.loads(line)
        if "synthetic" in job:  # a synthetic session: (turns, seed)
            from context_compact.testing.script import from_workload
            from context_compact.testing.workload import synthetic_session

            script = from_workload(synthetic_session(*job["synthetic"]))
            sys.stdout.write(json.dumps(replay_peer(job["peer"], script, job["budget"])) + "\n")
            sys.stdout.flush()
            continue
        if job["trajectories"] not in loaded:
            config = BenchConfig(trajectories=Path(job["trajectories"]))
            scripts.update({s.name: s for s in real_scripts(config, [])})
            loaded.add(job["trajectories"])
        try:
            row = replay_peer(job["peer"], scripts[job["workload"]], job["budget"])
        except Exception as error:  # the bench reports it as that peer's error
            row = {"error": f"{type(error).__name__}: {error}"}
        sys.stdout.write(json.dumps(row) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
