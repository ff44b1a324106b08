"""The seed engine: the seed's four stages in its fixed order (SPEC S-6.1), stateless.

``prepare`` runs tool_result_budget, snip_compact, micro_compact, then compact_history only
if the view is still over ``context_limit`` (characters, S-0.2). ``compact`` is
compact_history (S-4), ``reactive`` is reactive_compact (S-5). Each stage is also a method
(``engine.micro_compact(messages)``): the seed's stages belong to this engine only, so
``Compactor`` does not offer them under another policy.

Every call validates its input first (``InvalidHistory`` naming the message and the rule)
and never modifies it. The seed keeps no log: each call sees only what it is given, so
``observe`` and ``overhead`` change nothing (the seed counts characters of the messages).
"""

from __future__ import annotations

from typing import Any

from ..engine import Env, Message, StatelessEngine
from ..invariants import ensure_valid
from ..messages import as_dicts
from ..policy import SeedPolicy
from ..sizing import estimate_chars
from ..summarize import focused, seed_form
from . import budget, micro, snip, summary
from .base import StageContext


class SeedEngine(StatelessEngine):
    name = "seed"

    def __init__(self, policy: SeedPolicy, env: Env) -> None:
        self.policy = policy
        self.env = env
        self.ctx = StageContext(policy, env.store, estimate_chars, env.emit)
        # S-4.2/S-4.3's call, exact, from a summarizer that can also make the structured one.
        self.summarizer = seed_form(env.summarizer)

    def tool_result_budget(self, messages: list[Any]) -> list[Message]:
        messages = as_dicts(messages)
        ensure_valid(messages)
        return budget.tool_result_budget(messages, self.ctx)

    def snip_compact(self, messages: list[Any]) -> list[Message]:
        messages = as_dicts(messages)
        ensure_valid(messages)
        return snip.snip_compact(messages, self.ctx)

    def micro_compact(self, messages: list[Any]) -> list[Message]:
        messages = as_dicts(messages)
        ensure_valid(messages)
        return micro.micro_compact(messages, self.ctx)

    def prepare(self, messages: list[Any], request: str) -> list[Message]:
        """S-6.1: budget, snip, micro, then summarize only if still over the limit."""
        messages = as_dicts(messages)
        ensure_valid(messages)
        view = budget.tool_result_budget(messages, self.ctx)
        view = snip.snip_compact(view, self.ctx)
        view = micro.micro_compact(view, self.ctx)
        if estimate_chars(view) > self.policy.context_limit:
            if self.policy.echo:
                print("[auto compact]")
            view = summary.compact_history(view, request, self.ctx, self.summarizer)
        return view

    def compact(
        self, messages: list[Any], request: str, instructions: str | None = None
    ) -> list[Message]:
        messages = as_dicts(messages)
        ensure_valid(messages)
        summarizer = focused(self.summarizer, instructions)
        return summary.compact_history(messages, request, self.ctx, summarizer)

    def reactive(self, messages: list[Any], request: str) -> list[Message]:
        messages = as_dicts(messages)
        ensure_valid(messages)
        return summary.reactive_compact(messages, request, self.ctx, self.summarizer)
