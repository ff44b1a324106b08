"""Stores: durable copies of everything that leaves the context view."""

from .base import Store
from .files import FileStore, safe_id
from .memory import MemoryStore

__all__ = ["FileStore", "MemoryStore", "Store", "safe_id"]
