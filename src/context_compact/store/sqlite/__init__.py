"""The SQLite backend: ``SqliteStore`` and its parts, one SQLite file per store.

Its parts: the store and its journal API (``store.py``), the schema and how a connection opens
(``schema.py``), the journal rows (``journal.py``), compressed texts (``blobs.py``), exported
files (``files.py``), search (``search.py``), integrity checks (``checks.py``) and
transactions (``tx.py``). The store's names are loaded the first time one is asked for
(PEP 562): the shared search index imports ``tx`` alone, without the store.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .store import CHECKPOINT_EVERY, WORKDIR_DB, SqliteStore, workdir_store

_STORE = {"CHECKPOINT_EVERY", "WORKDIR_DB", "SqliteStore", "workdir_store"}


def __getattr__(name: str) -> Any:
    if name not in _STORE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(".store", __name__), name)
    globals()[name] = value  # the next lookup finds it without coming here
    return value


__all__ = ["CHECKPOINT_EVERY", "WORKDIR_DB", "SqliteStore", "workdir_store"]
