"""Write ``tests/store/data/layout-0005.db``, a SqliteStore database as the code before
migration 0006 wrote it (one row per record in ``messages``, ``edits``, ``events`` and
``records``, texts under a unique hash index), its witness, and ``layout-0005.json``: what
the old code read back from it (the number of records and the sha256 of their JSON) and the
sha256 of every file it exported. The tests open a copy with the current code to check that
an old database still reads, verifies, passes ``doctor`` and takes appends.

Run with the *old* code on the path, e.g. from a checkout of commit 8c6be32:
``PYTHONPATH=<old checkout>/src python scripts/make_old_sqlite_db.py tests/store/data``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from context_compact import Compactor, Policy
from context_compact.store import SqliteStore
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session


def records_hash(records: list[Any]) -> str:
    """The sha256 of the records as canonical JSON (the test computes it the same way)."""
    text = json.dumps(records, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def main(out: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix="old-layout-"))
    store = SqliteStore(work / "layout-0005.db", root=work / "root")
    # A session as the engine writes it: messages, edits, events; results persisted,
    # cleared into packs, summarized into archives; the session index appended to.
    compactor = Compactor(Policy.default(context_limit=3_000), store, BenchSummarizer())
    work_session = synthetic_session(16, seed=3)
    messages: list[Any] = [{"role": "user", "content": work_session.request}]
    for turn in work_session.turns:
        messages = compactor.prepare(messages, work_session.request)
        messages += [turn.assistant, turn.results]
    # What the session above did not make: a pack (pieces by hash in file_chunks), a record
    # of a kind with no table of its own (the records table).
    store.save_pack(["piece one " * 120, "an old tool result line\n" * 80])
    assert compactor.session_id is not None
    store.append(compactor.session_id, [{"kind": "note", "text": "from the old layout"}])
    # What the old code read back and exported: the test compares the new code's reading.
    root = work / "root"
    seen = {
        "session": compactor.session_id,
        "records": len(list(store.records(compactor.session_id))),
        "records_sha256": records_hash(list(store.records(compactor.session_id))),
        "files": {
            str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(root.rglob("*"))
            if path.is_file() and store.issued(str(path))
        },
    }
    store.close()
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(work / "layout-0005.db", out / "layout-0005.db")
    # The witness of the session's chain (witness.py), so the copy is checked against it too.
    shutil.rmtree(out / "layout-0005.db-heads", ignore_errors=True)
    shutil.copytree(work / "layout-0005.db-heads", out / "layout-0005.db-heads")
    (out / "layout-0005.json").write_text(json.dumps(seen, indent=1) + "\n", encoding="ascii")
    shutil.rmtree(work)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
