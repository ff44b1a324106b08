"""The PostgreSQL backend: ``PostgresStore``, one database shared by a fleet of workers.

Its parts: the store and its journal (``store.py``), the connection and its errors
(``base.py``), the schema's migrations (``schema.py``), the files any worker reads
(``files.py``) and one writer per session with fencing tokens (``lease.py``).
"""

from __future__ import annotations

from .base import ServerUnavailable, shown_url
from .store import PostgresStore

__all__ = ["PostgresStore", "ServerUnavailable", "shown_url"]
