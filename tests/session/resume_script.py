"""A scripted agent session over a SqliteStore, for the resume tests (also run as a process).

``python resume_script.py DB SESSION`` plays the script from wherever the session stands (with
4 ms per model call, so that a kill lands mid-session), so a process killed at any moment and
started again continues it. ``play`` returns every view it
sent, keyed by the number of logged messages after the call, for comparison.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from context_compact import Compactor, Policy
from context_compact.store import SqliteStore
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session

TURNS = 240
LIMIT = 5_000
SEED = 7


def usage_of(view: list[Any]) -> int:
    """What a model would report: a deterministic function of the request."""
    return len(json.dumps(view)) // 4 + 400


def script() -> tuple[str, list[list[dict[str, Any]]]]:
    w = synthetic_session(TURNS, seed=SEED)
    return w.request, [[t.assistant, t.results] for t in w.turns]


def open_compactor(db: str, session: str | None) -> Compactor:
    # Summaries at the trigger: one made ahead lands when its worker is done, which varies
    # from run to run with the machine's load, and the reference is another run.
    policy = Policy.default(context_limit=LIMIT, summarize_ahead=False)
    return Compactor(policy, SqliteStore(db), BenchSummarizer(), session=session)


def play(c: Compactor, model_seconds: float = 0.0) -> dict[int, str]:
    """Continue the script from what the session has logged; the views sent (as JSON, taken
    when sent: the loop goes on appending to the list), by log length."""
    request, turns = script()
    sid = c.session_id
    assert sid is not None
    logged = sum(1 for r in c.store.records(sid) if r["kind"] == "message")
    sent: dict[int, str] = {}
    if logged == 0:
        view = c.prepare([{"role": "user", "content": request}], request)
        logged = 1
    else:
        view = c.view()
    sent[logged] = json.dumps(view)
    c.observe(usage_of(view))
    done = (logged - 1) // 2
    for step in turns[done:]:
        view.extend(step)
        view = c.prepare(view, request)
        logged += len(step)
        sent[logged] = json.dumps(view)
        time.sleep(model_seconds)  # the model call, during which a kill is most likely
        c.observe(usage_of(view))
    return sent


def check(db: str, session: str, reference: dict[int, str]) -> str | None:
    """Reopen the session, compare its view and every view it sends next with
    ``reference``: the first difference, or None."""
    compactor = open_compactor(db, session)
    try:
        sid = compactor.session_id
        logged = sum(1 for r in compactor.store.records(sid) if r["kind"] == "message")
        if logged and json.dumps(compactor.view()) != reference[logged]:
            return f"the reopened view after {logged} messages differs"
        for length, view in play(compactor).items():
            if view != reference[length]:
                return f"view after {length} messages differs"
        return None
    finally:
        compactor.store.close()


if __name__ == "__main__":
    # DB SESSION: play (a model call takes 4 ms); --dump FILE: play, write the views sent;
    # --check FILE: reopen and continue, compared with the views in FILE (exit 1, saying
    # where, at the first difference). Each in a fresh process: nothing another test left
    # in the process running the tests can reach it.
    db, session = sys.argv[1], sys.argv[2]
    if len(sys.argv) > 4 and sys.argv[3] == "--dump":
        compactor = open_compactor(db, session)
        sent = play(compactor)
        compactor.store.close()
        with open(sys.argv[4], "w", encoding="utf-8") as out:
            json.dump({str(k): v for k, v in sent.items()}, out)
    elif len(sys.argv) > 4 and sys.argv[3] == "--check":
        with open(sys.argv[4], encoding="utf-8") as given:
            reference = {int(k): v for k, v in json.load(given).items()}
        problem = check(db, session, reference)
        if problem is not None:
            print(problem)
            sys.exit(1)
    else:
        compactor = open_compactor(db, session)
        play(compactor, model_seconds=0.004)
        compactor.store.close()
