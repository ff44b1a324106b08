"""Compaction events: what a stage did, how big the view was before and after, where copies went.

Every stage that changes the view emits exactly one event; the CLI prints them, a library
user subscribes with ``Compactor.subscribe(callback)`` or reads ``Compactor.events``.
A summary under the default engine carries ``score``: ``summary_score`` of the summary
against the messages it was given (share of identifiers, files, errors and user constraints
present; ``overall`` pools them; None where the source held none of a kind).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class CompactionEvent:
    stage: str
    before: int
    after: int
    unit: str
    paths: tuple[str, ...] = ()
    note: str = ""
    score: Mapping[str, float | None] | None = None

    def __str__(self) -> str:
        where = f" -> {', '.join(self.paths)}" if self.paths else ""
        note = f" ({self.note})" if self.note else ""
        return f"[{self.stage}] {self.before:,} -> {self.after:,} {self.unit}{note}{where}"
