"""The SQLite backend: ``SqliteStore`` and its parts, one SQLite file per store.

Its parts: the store and its journal API (``store.py``), the schema and how a connection opens
(``schema.py``), the journal rows (``journal.py``), compressed texts (``blobs.py``), exported
files (``files.py``), search (``search.py``) over the side index (``index.py``, which
``FileStore`` searches with too), integrity checks (``checks.py``), transactions (``tx.py``)
and the agent CLI's store in a work directory (``workdir.py``). The store's names are loaded
the first time one is asked for (PEP 562): the side index imports ``tx`` alone, without the
store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import loader

if TYPE_CHECKING:
    from .store import CHECKPOINT_EVERY, SqliteStore
    from .workdir import WORKDIR_DB, workdir_store

# Each name and the module of this package it lives in.
_LAZY = {
    "CHECKPOINT_EVERY": ".store",
    "SqliteStore": ".store",
    "WORKDIR_DB": ".workdir",
    "workdir_store": ".workdir",
}


__getattr__ = loader(__name__, _LAZY)


__all__ = ["CHECKPOINT_EVERY", "WORKDIR_DB", "SqliteStore", "workdir_store"]
