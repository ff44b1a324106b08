"""Stores: durable copies of everything that leaves the context view, and the session journal.

The protocol (``base.py``) and the errors are loaded with the package; each backend the first
time its name is asked for (PEP 562), so a program on a ``MemoryStore`` loads neither
SQLite's nor PostgreSQL's store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import (
    CorruptJournal,
    CorruptStore,
    ReadOnlyStore,
    SessionExists,
    SessionLocked,
    UnknownMigration,
)
from .base import Record, Store
from .lazy import loader

if TYPE_CHECKING:
    from .files import FileStore, safe_id
    from .memory import MemoryStore
    from .postgres import PostgresStore
    from .sqlite import WORKDIR_DB, SqliteStore, workdir_store
    from .url import store_from_url

# The name and the module of this package it lives in.
_LAZY: dict[str, str] = {
    "FileStore": ".files",
    "safe_id": ".files",
    "MemoryStore": ".memory",
    "PostgresStore": ".postgres",
    "WORKDIR_DB": ".sqlite",
    "SqliteStore": ".sqlite",
    "workdir_store": ".sqlite",
    "store_from_url": ".url",
}


__getattr__ = loader(__name__, _LAZY)


__all__ = [
    "WORKDIR_DB",
    "CorruptJournal",
    "CorruptStore",
    "FileStore",
    "MemoryStore",
    "PostgresStore",
    "ReadOnlyStore",
    "Record",
    "SessionExists",
    "SessionLocked",
    "SqliteStore",
    "Store",
    "UnknownMigration",
    "safe_id",
    "store_from_url",
    "workdir_store",
]
