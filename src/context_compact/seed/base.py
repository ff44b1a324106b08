"""What every stage gets: the policy, the store, a sizer, and a way to report what it did.

A stage is a pure function of the messages it is given and this context: it returns a new
list (sharing untouched messages), writes copies only through ``ctx.store`` and reports
through ``ctx.emit`` (events) and ``ctx.say`` (the seed's own lines). It never modifies its
input.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..events import CompactionEvent
from ..store.base import Store
from .policy import SeedPolicy

Sizer = Callable[[list[Any]], int]
Summarizer = Callable[[list[Any]], str]


@dataclass(frozen=True)
class StageContext:
    policy: SeedPolicy
    store: Store
    size: Sizer
    emit: Callable[[CompactionEvent], None]
    say: Callable[[str], None]
    """The seed's own lines (``[auto compact]``): the host logs them, or prints them."""

    def event(
        self, stage: str, before: int, after: int, paths: tuple[str, ...] = (), note: str = ""
    ) -> None:
        self.emit(CompactionEvent(stage, before, after, self.policy.unit, paths, note))
