"""Stores: durable copies of everything that leaves the context view, and the session journal."""

from .base import Record, Store
from .files import FileStore, safe_id
from .journal import CorruptJournal, SessionExists
from .memory import MemoryStore
from .schema import UnknownMigration
from .sqlite import SqliteStore

__all__ = [
    "CorruptJournal",
    "FileStore",
    "MemoryStore",
    "Record",
    "SessionExists",
    "SqliteStore",
    "Store",
    "UnknownMigration",
    "safe_id",
]
