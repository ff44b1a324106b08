"""Issue 12's README example: the default engine's summary of a real recorded session, offline.

Loads one trajectory with ``context_compact.loaders``, replays it through
``Policy.default(context_limit=BUDGET)`` with the extractive summarizer (no model), and prints
the last summary message the model would see, then each summary's score (``summary_score``
against what it was given) and the user messages pinned in the final view.

    .venv/bin/python benchmarks/summary_example.py \\
        [--session ../shared/data/trajectories/claude-code/marot-spotter/...jsonl] \\
        [--budget 12500] [--index 0]
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from context_compact import Compactor, MemoryStore, Policy
from context_compact.loaders import load_session
from context_compact.messages import is_request
from context_compact.testing.replay import replay
from context_compact.testing.script import from_session

DEFAULT = "../shared/data/trajectories/swe-agent/pydicom__pydicom-1458.traj"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--session", default=DEFAULT)
    parser.add_argument("--index", type=int, default=0)
    parser.add_argument("--budget", type=int, default=12_500)
    args = parser.parse_args(argv)
    logging.getLogger("context_compact.loaders").setLevel(logging.ERROR)
    session = load_session(Path(args.session), args.index)
    store = MemoryStore("/memory")
    compactor = Compactor(Policy.default(context_limit=args.budget), store)
    script = from_session(session)
    out = replay(compactor, script, store=store, root="/memory", overhead_tokens=0)
    view = compactor.view()
    summary = next((m for m in view if str(m["content"]).startswith("[Compacted]")), None)
    print(f"# {session.format}: {session.name}, {len(session.messages)} messages")
    print(f"# budget {args.budget:,} tokens; lost {out.lost}; {out.user_kept} of")
    print(f"# {out.user_messages} user messages in view verbatim")
    for event in compactor.events:
        if event.stage == "summarize":
            print(f"# {event.note}; score {dict(event.score or {})}")
    print()
    print(summary["content"] if summary else "(no summary: the session fit)")
    print()
    pinned = [m for m in view if is_request(m) and m is not summary]
    print(f"# user messages in the final view: {len(pinned)}")


if __name__ == "__main__":
    main()
