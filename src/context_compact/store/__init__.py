"""Stores: durable copies of everything that leaves the context view, and the session journal."""

from .base import Record, Store
from .files import FileStore, safe_id
from .journal import CorruptJournal, SessionExists
from .lease import SessionLocked
from .memory import MemoryStore
from .schema import UnknownMigration
from .sqlite import WORKDIR_DB, CorruptStore, ReadOnlyStore, SqliteStore, workdir_store

__all__ = [
    "WORKDIR_DB",
    "CorruptJournal",
    "CorruptStore",
    "FileStore",
    "MemoryStore",
    "ReadOnlyStore",
    "Record",
    "SessionExists",
    "SessionLocked",
    "SqliteStore",
    "Store",
    "UnknownMigration",
    "safe_id",
    "workdir_store",
]
