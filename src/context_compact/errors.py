"""The exceptions a caller can meet, in one place.

ValueError
 └── InvalidHistory        the input violates check(); names the message and the rule
RuntimeError
 └── CompactionFailed      compaction could not bring the context back: the summarizer
                           failed too often, or the view stayed over the limit
"""

from __future__ import annotations

from .invariants import InvalidHistory


class CompactionFailed(RuntimeError):
    """Compaction cannot make progress; the message says why and what to do."""


__all__ = ["CompactionFailed", "InvalidHistory"]
