"""The seed engine: the seed's four stages in its fixed order (S-6.1), stateless.

``prepare`` runs tool_result_budget, snip_compact, micro_compact, then compact_history only
if the view is still over ``context_limit`` (characters, S-0.2). ``compact`` is
compact_history (S-4), ``reactive`` is reactive_compact (S-5). Each stage is also a method
(``engine.micro_compact(messages)``): the seed's stages belong to this engine only, so
``Compactor`` does not offer them under another policy.

Every call validates its input first (``InvalidHistory`` naming the message and the rule)
and never modifies it. The seed keeps no log: each call sees only what it is given, so
``observe`` and ``overhead`` change nothing (the seed counts characters of the messages).

Store faults (beyond the seed): every stage writes its copy before it changes anything, so a
stage whose write the store refuses is skipped with a ``store_error`` event; a summary that
cannot write its transcript raises ``StoreUnavailable`` (nothing was removed).
"""

from __future__ import annotations

from collections.abc import Callable

from ..engine import Env, Message, StatelessEngine
from ..errors import StoreUnavailable
from ..invariants import ensure_valid
from ..messages import as_dicts
from ..sizing import estimate_chars
from ..store.base import NOT_REFUSED, STORE_ERRORS
from ..summary.contract import SummaryRequest, text_of
from . import budget, micro, snip, summary
from .base import StageContext
from .policy import SeedPolicy

Stage = Callable[[list[Message], StageContext], list[Message]]


class SeedEngine(StatelessEngine):
    name = "seed"

    def __init__(self, policy: SeedPolicy, env: Env) -> None:
        self.policy = policy
        self.env = env
        self.ctx = StageContext(policy, env.store, estimate_chars, env.emit, env.say)
        self._faulted: BaseException | None = None

    def summarize(self, messages: list[Message], focus: str | None = None) -> str:
        """The summary of ``messages``, asked in the seed's form: S-4.2/S-4.3's call, exact,
        from a summarizer that can also make the structured one (``LLMSummarizer``)."""
        ask = SummaryRequest(messages, focus=focus, form="seed")
        return text_of(self.env.summarizer.summarize(ask))

    def tool_result_budget(self, messages: list[Message]) -> list[Message]:
        messages = as_dicts(messages)
        ensure_valid(messages)
        return budget.tool_result_budget(messages, self.ctx)

    def snip_compact(self, messages: list[Message]) -> list[Message]:
        messages = as_dicts(messages)
        ensure_valid(messages)
        return snip.snip_compact(messages, self.ctx)

    def micro_compact(self, messages: list[Message]) -> list[Message]:
        messages = as_dicts(messages)
        ensure_valid(messages)
        return micro.micro_compact(messages, self.ctx)

    def _stage(self, run: Stage, view: list[Message], name: str) -> list[Message]:
        """A stage whose write the store refused changes nothing (its copy comes first), and
        a ``store_error`` event says so; the pipeline goes on with the view as it was."""
        try:
            return run(view, self.ctx)
        except NOT_REFUSED:
            raise
        except STORE_ERRORS as error:
            self._faulted = error
            size = estimate_chars(view)
            note = f"{name} skipped: the store refused a write ({_describe(error)})"
            self.ctx.event("store_error", size, size, (), note)
            return view

    def prepare(self, messages: list[Message], request: str) -> list[Message]:
        """S-6.1: budget, snip, micro, then summarize only if still over the limit."""
        messages = as_dicts(messages)
        ensure_valid(messages)
        self._faulted = None
        view = self._stage(budget.tool_result_budget, messages, "tool_result_budget")
        view = self._stage(snip.snip_compact, view, "snip_compact")
        if self._faulted is None:
            view = self._stage(micro.micro_compact, view, "micro_compact")
        else:
            # micro_compact drops old results' text with no copy of its own: after a refused
            # write (a snip that could not archive, a result that could not be persisted) it
            # could drop the only reference to a copy. Nothing leaves the view this call.
            size = estimate_chars(view)
            if size > self.policy.context_limit:
                raise StoreUnavailable(
                    f"could not bring the context under its limit: the store refused a write "
                    f"({_describe(self._faulted)}); nothing left the context, which holds "
                    f"{size:,} characters (limit {self.policy.context_limit:,}). Free space or "
                    "fix the store's permissions, then retry."
                ) from self._faulted
        if estimate_chars(view) > self.policy.context_limit:
            self.ctx.say("[auto compact]")
            view = self._required(
                lambda: summary.compact_history(view, request, self.ctx, self.summarize),
                "summarize the history",
            )
        return view

    def _required(self, run: Callable[[], list[Message]], doing: str) -> list[Message]:
        try:
            return run()
        except NOT_REFUSED:
            raise
        except STORE_ERRORS as error:
            raise StoreUnavailable(
                f"could not {doing}: the store refused to write the transcript "
                f"({_describe(error)}); nothing was removed. Free space or fix the store's "
                "permissions, then retry."
            ) from error

    def compact(
        self, messages: list[Message], request: str, instructions: str | None = None
    ) -> list[Message]:
        messages = as_dicts(messages)
        ensure_valid(messages)
        return self._required(
            lambda: summary.compact_history(
                messages, request, self.ctx, lambda old: self.summarize(old, instructions)
            ),
            "compact",
        )

    def reactive(self, messages: list[Message], request: str) -> list[Message]:
        messages = as_dicts(messages)
        ensure_valid(messages)
        return self._required(
            lambda: summary.reactive_compact(messages, request, self.ctx, self.summarize),
            "compact after the refusal",
        )


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"
