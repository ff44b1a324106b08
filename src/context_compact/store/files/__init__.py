"""The plain-files backend: ``FileStore``, the Store protocol in files under one root.

Its parts: the store (``store.py``), its journal lines and their checks (``journal.py``), the
checkpoints' marks (``marks.py``), the sessions' leases (``locks.py``), the framed ledger of
issued paths (``ledger.py``) and search over its journals (``search.py``).
"""

from __future__ import annotations

from .store import FileStore, safe_id

__all__ = ["FileStore", "safe_id"]
