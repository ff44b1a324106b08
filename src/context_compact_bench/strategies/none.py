"""``none``: no context management at all; every request is the whole history.

What an agent loop without compaction sends. It never rewrites history (a perfect cache
prefix) and loses nothing, until the history outgrows the window: the bench reports the
first call over the budget (``overflow_turn``), where a real API refuses the request.
"""

from __future__ import annotations

from typing import Any

from context_compact.engine import Env, StatelessEngine
from context_compact.invariants import ensure_valid
from context_compact.messages import Message, as_dicts


class NoManagement(StatelessEngine):
    name = "none"

    def prepare(self, messages: list[Message], active_request: str) -> list[Message]:
        messages = as_dicts(messages)
        ensure_valid(messages)
        return list(messages)


def build(setup: Any) -> NoManagement:
    return NoManagement()


def engine(policy: Any, env: Env) -> NoManagement:
    return NoManagement()
