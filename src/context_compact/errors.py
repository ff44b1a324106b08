"""The exceptions a caller can meet, in one place.

ValueError
 └── InvalidHistory        the input violates check(); names the message and the rule
RuntimeError
 └── CompactionFailed      compaction could not bring the context back: the summarizer
      │                    failed too often, or the view stayed over the limit
      └── StoreUnavailable the store refused a write (disk full, read-only, permissions):
                           nothing left the view without its copy; the message names the
                           store's own error, which is also the exception's __cause__
"""

from __future__ import annotations

from .invariants import InvalidHistory


class CompactionFailed(RuntimeError):
    """Compaction cannot make progress; the message says why and what to do."""


class StoreUnavailable(CompactionFailed):
    """The store refused a write that compaction or the session journal needed."""


__all__ = ["CompactionFailed", "InvalidHistory", "StoreUnavailable"]
