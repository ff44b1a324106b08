"""A session as the bench replays it: what is sent first, then what each turn appends.

    Script(name, head, steps, requests, needles, pattern, system)

``head`` is the history before the model's first call (the user's request); ``steps[i]`` is
what the agent loop appends after call ``i``: the assistant message and the user message(s)
that follow it (tool results, or a new request). ``requests[i]`` is the latest real user
request at call ``i`` (what ``prepare`` is told is active). ``needles`` are what a bench
looks for at the end to tell whether a result is still reachable: the planted facts of a
synthetic session (``pattern`` matches them all), or the full text of every tool result of a
recorded session.

``from_workload`` turns a synthetic ``Workload`` into a script; ``from_session`` a recorded
session from ``context_compact.loaders`` (one step per assistant message: ``loaders.turns``,
which the CLI's replay uses too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..loaders import Session
from ..loaders.turns import turns
from ..messages import Message, block_type, blocks, result_text
from .workload import Workload

FACT_PATTERN = re.compile(r"FACT-\d+-\d+: [0-9a-f]{12}")


@dataclass(frozen=True)
class Script:
    name: str
    head: tuple[Message, ...]
    steps: tuple[tuple[Message, ...], ...]
    requests: tuple[str, ...]
    needles: tuple[str, ...]
    pattern: re.Pattern[str] | None = None
    system: str = ""
    kind: str = "synthetic"
    thinking: bool = False
    """Requests are sent with extended thinking on (``api_check.refusal`` checks them so)."""

    @property
    def turns(self) -> int:
        return len(self.steps)

    def step(self, index: int, view: list[Message]) -> tuple[Message, ...]:
        """What the loop appends after call ``index``, given the view that call returned (a
        script written in advance ignores it; ``longturn.LongTurn`` does not)."""
        return self.steps[index]

    @property
    def messages(self) -> list[Message]:
        """The whole session, as a caller that never compacts would hold it."""
        return [*self.head, *(m for step in self.steps for m in step)]


def from_workload(workload: Workload) -> Script:
    head: tuple[Message, ...] = ({"role": "user", "content": workload.request},)
    steps = tuple((t.assistant, t.results) for t in workload.turns)
    return Script(
        name=workload.name,
        head=head,
        steps=steps,
        requests=(workload.request,) * (len(steps) + 1),
        needles=tuple(workload.facts),
        pattern=FACT_PATTERN,
        kind="synthetic",
    )


def from_session(session: Session, name: str | None = None) -> Script:
    """A recorded session (``loaders.Session``): one step per assistant message
    (``loaders.turns``)."""
    messages: list[Message] = list(session.messages)
    cut = turns(messages)
    needles = tuple(
        result_text(b)
        for m in messages
        if m.get("role") == "user"
        for b in blocks(m)
        if block_type(b) == "tool_result"
    )
    return Script(
        name=name or f"{session.format}:{session.name}",
        head=cut.head,
        steps=cut.steps,
        requests=cut.requests,
        needles=needles,
        pattern=None,
        system=session.system or "",
        kind="real",
    )


def as_script(workload: Workload | Script) -> Script:
    return workload if isinstance(workload, Script) else from_workload(workload)
