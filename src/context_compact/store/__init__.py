"""Stores: durable copies of everything that leaves the context view, and the session journal."""

from .base import Record, Store
from .files import FileStore, safe_id
from .journal import CorruptJournal, SessionExists
from .lease import SessionLocked
from .memory import MemoryStore
from .postgres import PostgresStore
from .schema import UnknownMigration
from .sqlite import WORKDIR_DB, CorruptStore, ReadOnlyStore, SqliteStore, workdir_store
from .url import store_from_url

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
