"""The long-turn workload: one request, then N tool steps, with extended thinking on.

How Claude Code, Codex and other autonomous agents run: the user asks once, and the model
calls tools until it is done, never handing the turn back. Each step is an assistant message
of one to three ``tool_use`` blocks and the user message of their results, the calls and
result sizes of ``workload.synthetic_session`` (80% of 200-3,000 chars, 15% of 5,000-20,000,
5% of 40,000-120,000, a planted fact in each), the same for every strategy.

The model thinks as Claude does without interleaved thinking: its message opens with a
signed ``thinking`` block exactly when it opens a new turn, that is when the request it
answers has no assistant message after its last user message that holds no tool result (the
first call after the user's request, and the first after a summary that closed the turn).
That depends on the view each strategy returned, so the thinking is decided call by call
(``LongTurn.step``), not written in advance. Every request is checked against the Messages
API's rules with thinking on (``api_check.refusal``); the replay counts the refusals.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from context_compact.messages import Message, blocks
from context_compact.testing.api_check import final_turn_opener, thinking_block
from context_compact.testing.script import Script, from_workload
from context_compact.testing.workload import synthetic_session

DEFAULT_STEPS = 2_000
BUDGETS = (12_500, 200_000)
KIND = "long-turn"

_THOUGHTS = (
    "The request asks for the parser fix without touching the public API.",
    "The failing test points at the tokenizer's handling of trailing input.",
    "I should read the handler before changing the schema.",
    "The last run showed a timeout in the worker queue; check the retry path.",
    "Keep the change small and run the tests after each edit.",
    "The grep hits suggest the cache is built in two places.",
)


def thinking_text(seed: int, index: int) -> str:
    """The model's thinking at call ``index``: 300-1,500 characters, the same for every
    strategy (seeded by the call, not by what the strategy did)."""
    rng = random.Random(seed * 1_000_003 + index)
    size = rng.randint(300, 1_500)
    parts = [f"Call {index}: where am I in the task, and what is the next tool call?"]
    length = len(parts[0])
    while length < size:
        parts.append(rng.choice(_THOUGHTS))
        length += len(parts[-1]) + 1
    return " ".join(parts)[:size]


@dataclass(frozen=True)
class LongTurn(Script):
    seed: int = 0

    def step(self, index: int, view: list[Message]) -> tuple[Message, ...]:
        """The step after call ``index``: its assistant message opens with thinking when the
        request ``view`` leaves the model at the start of a turn."""
        assistant, *rest = self.steps[index]
        if final_turn_opener(view) is not None:
            return self.steps[index]
        thinks = thinking_block(thinking_text(self.seed, index))
        opened: Message = {**assistant, "content": [thinks, *blocks(assistant)]}
        return (opened, *rest)


def long_turn_script(steps: int = DEFAULT_STEPS, seed: int = 0) -> LongTurn:
    """One request, then ``steps`` tool steps (``synthetic_session(steps, seed)``'s calls and
    results, one assistant message each), thinking on."""
    base = from_workload(synthetic_session(steps, seed))
    return LongTurn(
        name=f"long-turn-{steps}",
        head=base.head,
        steps=base.steps,
        requests=base.requests,
        needles=base.needles,
        pattern=base.pattern,
        kind=KIND,
        thinking=True,
        seed=seed,
    )


def at_budget(script: LongTurn, budget: int) -> LongTurn:
    """The same workload named for one budget (a bench row is a workload at a budget)."""
    return replace(script, name=f"{script.name}-w{budget}")
