"""``seed`` and ``default``: this library's ``Compactor`` under its two presets.

* ``seed``: ``Compactor(Policy.seed())``, the seed's pipeline exactly (SPEC S-0.3), its
  limit in characters: ``4 * budget`` (50,000 chars at the default 12,500-token budget).
* ``default``: ``Compactor(Policy.default(context_limit=budget))``, limits in tokens of
  the request as sent (system prompt included), an append-only log and a derived view.
"""

from __future__ import annotations

from typing import Any

from ...pipeline import Compactor
from ...policy import Policy
from .base import Message

CHARS_PER_TOKEN = 4


class CompactorStrategy:
    def __init__(self, name: str, compactor: Compactor) -> None:
        self.name = name
        self.compactor = compactor

    def prepare(self, messages: list[Message], active_request: str) -> list[Message]:
        return self.compactor.prepare(messages, active_request)


def build_seed(setup: Any) -> CompactorStrategy:
    policy = Policy.seed(context_limit=CHARS_PER_TOKEN * setup.budget, echo=False)
    return CompactorStrategy("seed", Compactor(policy, setup.store, setup.summarizer))


def build_default(setup: Any) -> CompactorStrategy:
    compactor = Compactor(Policy.default(context_limit=setup.budget), setup.store, setup.summarizer)
    if compactor.session is not None:
        compactor.session.overhead = setup.overhead
    return CompactorStrategy("default", compactor)
