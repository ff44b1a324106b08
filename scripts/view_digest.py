"""Digests of what the default policy did on the bench's synthetic session: every view it
returned, its events and the files it issued, to compare two checkouts for equal decisions.

    python scripts/view_digest.py loop 12500 3000 file     # a loop of 3,000 turns
    python scripts/view_digest.py cold 12500 3000 file     # one prepare of 3,000 turns' history

Run it under each checkout (``PYTHONPATH=OTHER/src python scripts/view_digest.py ...``): the
same three digests mean the same views byte for byte, the same events (stage, tokens before
and after, note) and the same files issued (results, packs, archives, the session's
index). The store's root is a fixed folder, emptied first, since
paths are part of what the views say.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

from context_compact import Compactor
from context_compact.testing.fakes import BenchSummarizer
from context_compact_bench.suite import REQUEST, Chunks, make_policy, make_store

ROOT = Path(tempfile.gettempdir()) / "context-compact-view-digest"


def digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()[:16]


def main(kind: str, window: int, turns: int, store_kind: str) -> None:
    shutil.rmtree(ROOT, ignore_errors=True)
    ROOT.mkdir(parents=True)
    chunks = Chunks(tempfile.gettempdir(), 500)
    store = make_store(store_kind, ROOT)
    compactor = Compactor(make_policy("default", window), store, BenchSummarizer(), session="s")
    views = hashlib.sha256()
    history = [{"role": "user", "content": REQUEST}]
    if kind == "cold":
        for turn in chunks.turns(turns):
            history += [turn.assistant, turn.results]
        views.update(json.dumps(compactor.prepare(history, REQUEST)).encode())
    else:
        for turn in chunks.turns(turns):
            history = compactor.prepare(history, REQUEST)
            views.update(json.dumps(history).encode())
            history += [turn.assistant, turn.results]
    events = [(e.stage, e.before, e.after, e.note) for e in compactor.events]
    files = sorted(
        (p.relative_to(ROOT).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest())
        for p in ROOT.rglob("*")
        if p.is_file()
        and p.relative_to(ROOT).parts[0] in (".task_outputs", ".transcripts")
        and p.relative_to(ROOT).parts[:2] != (".transcripts", "sessions")  # journal, lease
        and "search-index" not in p.name
    )
    if len(sys.argv) > 5:
        Path(sys.argv[5]).write_text(json.dumps(files, indent=0))
    print(
        f"views {views.hexdigest()[:16]}  events {digest(events)} ({len(events)})  "
        f"files {digest(files)} ({len(files)})"
    )


if __name__ == "__main__":
    if len(sys.argv) < 5 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        print("\nusage: view_digest.py loop|cold WINDOW TURNS file|sqlite|memory [FILES_JSON]")
        sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
