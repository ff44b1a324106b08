"""A tool loop with a real model and scripted tools: how a model and its server behave under
compaction (``check-model``, the real-model tests).

A small local model rarely asks for tools of its own accord, and never the same ones twice,
so the loop cannot wait for it to: ``ToolDriver`` wraps the provider and, for each of the
first ``turns`` replies, keeps what the model said and adds one ``read_file`` call of the
next file of the drill's workspace. Every request is the model's real request (its server's
real refusals, usage and chat template); the summarizer may be the same model. The loop is
the ``Agent``'s own, so a refusal is recovered and its window adopted as in any session.

Invariants: the drill writes only its files under ``root``; the model's output is capped at
``reply_tokens`` a turn (a small model on a shared CPU answers in seconds).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..compactor import Compactor
from ..messages import Block, Message
from ..providers.base import ModelReply, Provider
from .loop import Agent, Compaction, LoopEvent, ModelCall, Refusal
from .tools import Workspace

TASK = "Read each file the tools open and say in one line what it defines."


def write_files(root: Path, count: int = 12, chars: int = 1_400) -> list[str]:
    """``count`` small Python modules under ``root/src``, each about ``chars`` long; their
    paths relative to ``root``."""
    (root / "src").mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        lines = [f'"""Module {i}: helpers for stage {i} of the pipeline."""', ""]
        n = 0
        while sum(len(line) + 1 for line in lines) < chars:
            lines += [
                f"def step_{i}_{n}(value: int) -> int:",
                f"    # stage {i}, step {n}: scale, then offset by the step number",
                f"    return value * {i + 2} + {n}",
                "",
            ]
            n += 1
        path = f"src/module_{i}.py"
        (root / path).write_text("\n".join(lines), encoding="utf-8")
        paths.append(path)
    return paths


class ToolDriver:
    """A ``Provider`` that asks the model and then adds the next scripted ``read_file`` call
    to its reply, for ``turns`` replies; after them the model's own reply ends the run."""

    def __init__(
        self, provider: Provider, paths: list[str], turns: int, reply_tokens: int = 16
    ) -> None:
        self.provider = provider
        self.paths = paths
        self.turns = turns
        self.reply_tokens = reply_tokens
        self.replies = 0

    def complete(
        self,
        *,
        system: str,
        messages: list[Message],
        tools: list[dict[str, Any]],
        max_tokens: int,
    ) -> ModelReply:
        reply = self.provider.complete(
            system=system,
            messages=messages,
            tools=tools,
            max_tokens=min(max_tokens, self.reply_tokens),
        )
        said = reply.text.strip() or "Reading the next file."
        content: list[Block] = [{"type": "text", "text": said}]
        if self.replies < self.turns:
            path = self.paths[self.replies % len(self.paths)]
            content.append(
                {
                    "type": "tool_use",
                    "id": f"drill_{self.replies}",
                    "name": "read_file",
                    "input": {"path": path},
                }
            )
        self.replies += 1
        stop = "tool_use" if len(content) > 1 else "end_turn"
        return ModelReply(
            message={"role": "assistant", "content": content}, stop_reason=stop, usage=reply.usage
        )

    def __getattr__(self, name: str) -> Any:
        # ``context_window``, ``token_counter``...: the wrapped provider's.
        return getattr(self.provider, name)


@dataclass
class DrillResult:
    """What the loop did: model calls made, refusals (each recovered or not), compaction
    events by stage, the window adopted and the limit in force at the end, seconds taken."""

    calls: int = 0
    refusals: list[Refusal] = field(default_factory=list)
    stages: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    window: tuple[int, str] | None = None
    limit: int = 0
    seconds: float = 0.0
    stopped: str = ""
    prompt_tokens: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "model_calls": self.calls,
            "refused": len(self.refusals),
            "refusals": [r.error_text for r in self.refusals],
            "compactions": self.stages,
            "window": None
            if self.window is None
            else {"tokens": self.window[0], "source": self.window[1]},
            "limit": self.limit,
            "largest_prompt": max(self.prompt_tokens, default=0),
            "stopped": self.stopped,
            "seconds": round(self.seconds, 1),
        }


def run_drill(
    provider: Provider,
    compactor: Compactor,
    root: Path,
    *,
    turns: int = 40,
    reply_tokens: int = 16,
    on_event: Callable[[LoopEvent], None] | None = None,
) -> DrillResult:
    """``turns`` tool turns of the ``Agent`` with ``provider`` answering (``ToolDriver``)."""
    result = DrillResult()

    def seen(event: LoopEvent) -> None:
        if isinstance(event, ModelCall):
            result.calls += 1
            result.prompt_tokens.append(event.input_tokens)
        elif isinstance(event, Refusal):
            result.refusals.append(event)
        elif isinstance(event, Compaction):
            stage = event.event.stage
            result.stages[stage] = result.stages.get(stage, 0) + 1
            if stage in ("window", "over_limit"):
                result.notes.append(event.event.note)
        if on_event is not None:
            on_event(event)

    paths = write_files(root)
    driver = ToolDriver(provider, paths, turns, reply_tokens)
    workspace = Workspace(root, bash_timeout=10, read_roots=(Path(compactor.store.root),))
    agent = Agent(driver, compactor, workspace, max_turns=turns + 1, on_event=seen)
    started = time.monotonic()
    try:
        result.stopped = agent.run([], TASK).stopped_reason
    finally:
        result.seconds = time.monotonic() - started
        result.window = compactor.window
        result.limit = compactor.limit
    return result


__all__ = ["DrillResult", "ToolDriver", "run_drill", "write_files"]
