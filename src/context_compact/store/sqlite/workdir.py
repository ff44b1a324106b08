"""The agent CLI's store: one SQLite database inside the work directory, files beside it.

The model's tools open the files the store issues (saved results, archives, session indexes)
under the work directory itself; the database sits in its ``.context-compact`` folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from .store import SqliteStore

WORKDIR_DB = Path(".context-compact") / "sessions.db"


def workdir_store(workdir: str | os.PathLike[str]) -> SqliteStore:
    """The agent CLI's store: every session in ``<workdir>/.context-compact/sessions.db`` and
    the files the model reads (saved results, archives, session indexes) under the work
    directory itself, where its tools can open them."""
    root = Path(workdir)
    return SqliteStore(root / WORKDIR_DB, root=root)
