"""Where SqliteStore's writes go: WAL frames per commit, by the b-tree each page belongs to.

Drives the loop of ``bench --store-io`` (default policy, 12,500 tokens, the synthetic coding
session) for N turns on a new SqliteStore with its background checkpoints off, so every frame
any commit wrote is still in the WAL; then reads the WAL's frame headers (page number; a
non-zero "database size" field marks a commit's last frame) and names each page's b-tree with
SQLite's ``dbstat`` table. A page is counted once per commit that wrote it.

Run: ``python scripts/sqlite_wal_frames.py [turns, default 300]``.
"""

from __future__ import annotations

import collections
import shutil
import sqlite3
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any

from context_compact.compactor import Compactor
from context_compact.policy import Policy
from context_compact.store import SqliteStore
from context_compact.store import sqlite as sqlite_store
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session
from context_compact_bench.suite import _result_bytes


def main(turns: int) -> None:
    sqlite_store.CHECKPOINT_EVERY = 1 << 62  # the WAL keeps every commit's frames
    root = Path(tempfile.mkdtemp(prefix="wal-frames-"))
    try:
        store = SqliteStore(root / "sessions.db")
        compactor = Compactor(Policy.default(context_limit=12_500), store, BenchSummarizer())
        work = synthetic_session(turns, seed=7)
        messages: list[Any] = [{"role": "user", "content": work.request}]
        results = 0
        for turn in work.turns:
            messages = compactor.prepare(messages, work.request)
            messages += [turn.assistant, turn.results]
            results += _result_bytes(turn)
        with sqlite3.connect(root / "sessions.db") as db:
            owner = dict(
                (page, name) for name, page in db.execute("SELECT name, pageno FROM dbstat")
            )
        wal = (root / "sessions.db-wal").read_bytes()
        store.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    page_size = struct.unpack(">I", wal[8:12])[0]
    commits: list[list[int]] = []
    current: list[int] = []
    at = 32  # the WAL header; then 24-byte frame headers, each followed by its page
    while at + 24 + page_size <= len(wal):
        page, size_after = struct.unpack(">II", wal[at : at + 8])
        current.append(page)
        if size_after:
            commits.append(current)
            current = []
        at += 24 + page_size
    frames = sum(len(c) for c in commits)
    print(f"{turns} turns, {len(commits)} commits, {page_size}-byte pages")
    print(f"frames per commit: {frames / len(commits):.1f}")
    print(f"WAL bytes / tool-result bytes: {len(wal) / results:.2f}")
    by_tree = collections.Counter(owner.get(p, "(freed)") for c in commits for p in c)
    for name, count in by_tree.most_common():
        if count / len(commits) >= 0.05:
            print(f"  {name:32} {count / len(commits):5.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
