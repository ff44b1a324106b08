"""Write ``tests/store/data/layout-0005.db``: a SqliteStore database as the code before migration
0006 wrote it (one row per record in ``messages``/``edits``/``events``/``records``, texts under
a unique hash index). The tests open a copy with the current code to check that an old
database still reads, verifies and takes appends.

Run with the *old* code on the path, e.g. from a checkout of commit 8c6be32:
``PYTHONPATH=<old checkout>/src python scripts/make_old_sqlite_db.py tests/store/data``.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from context_compact.store import SqliteStore


def main(out: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix="old-layout-"))
    store = SqliteStore(work / "layout-0005.db", root=work / "root")
    session = store.create_session({"title": "made by the layout of migration 0005"})
    long = "an old tool result line\n" * 80  # over 1 KiB: a text in blobs
    store.append(
        session,
        [
            {"kind": "message", "id": "m0", "parent": None, "message": {"content": "hello"}},
            {"kind": "message", "id": "m1", "parent": "m0", "message": {"content": long}},
        ],
    )
    store.append(session, [{"kind": "edit", "op": "clear", "ids": ["m1"]}])
    store.append(session, [{"kind": "event", "note": "compacted"}, {"kind": "observe", "n": 5}])
    store.save_blob(long + "saved")
    store.save_pack(["piece one " * 120, long])
    store.append_file("index.md", "first line\n")
    store.append_file("index.md", "second line\n")
    store.close()
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(work / "layout-0005.db", out / "layout-0005.db")
    # The witness of the session's chain (witness.py), so the copy is checked against it too.
    shutil.rmtree(out / "layout-0005.db-heads", ignore_errors=True)
    shutil.copytree(work / "layout-0005.db-heads", out / "layout-0005.db-heads")
    shutil.rmtree(work)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
