"""Replay a session through a strategy, turn by turn, the way the seed's loop drives it.

    messages = [request]
    for each turn:  messages = strategy.prepare(messages, request)   # what is sent
                    messages += [assistant turn, tool results]

Per call we record the tokens sent (system prompt and tool schemas included), how much of
the request is a prefix of the previous one (what a prompt cache can reuse) and whether
earlier history was rewritten, and how long ``prepare`` took. Cost follows Anthropic's
prompt-caching multipliers (cache reads 0.1x base input, cache writes 1.25x: Anthropic
"Prompt caching" docs, 2025): the shared prefix is read, the rest is written. Summary calls
are priced as plain input plus output.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..invariants import check
from ..sizing import TokenCounter
from ..store.base import Store
from .reach import reach
from .workload import Workload


class Strategy(Protocol):
    name: str

    def prepare(self, messages: list[Any], active_request: str) -> list[Any]: ...


@dataclass
class Replay:
    strategy: str
    workload: str
    turns: int = 0
    calls: int = 0
    view_tokens: list[int] = field(default_factory=list)
    cache_read: int = 0
    cache_write: int = 0
    rewrite_turns: int = 0
    violations: int = 0
    prepare_ms: list[float] = field(default_factory=list)
    summary_calls: int = 0
    summary_input_tokens: int = 0
    summary_output_tokens: int = 0
    overflow_turn: int | None = None
    in_view: int = 0
    recoverable: int = 0
    lost: int = 0

    @property
    def peak_tokens(self) -> int:
        return max(self.view_tokens, default=0)

    @property
    def total_input_tokens(self) -> int:
        return self.cache_read + self.cache_write

    @property
    def cache_read_share(self) -> float:
        return self.cache_read / self.total_input_tokens if self.total_input_tokens else 0.0

    def weighted_input(self) -> float:
        """Input cost in base-input-token units: reads 0.1x, writes 1.25x, summaries 1x."""
        return 0.1 * self.cache_read + 1.25 * self.cache_write + self.summary_input_tokens

    def p(self, q: float) -> float:
        if not self.prepare_ms:
            return 0.0
        ordered = sorted(self.prepare_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @property
    def p50_ms(self) -> float:
        return statistics.median(self.prepare_ms) if self.prepare_ms else 0.0


def _common_prefix(a: list[Any], b: list[Any]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x is not y and x != y:
            break
        n += 1
    return n


def replay(
    strategy: Strategy,
    workload: Workload,
    *,
    store: Store | None = None,
    root: str = "",
    overhead_tokens: int = 2_000,
    window: int | None = None,
    summarizer: Any = None,
    on_turn: Callable[[int], None] | None = None,
) -> Replay:
    """Drive ``strategy`` through ``workload``; ``window`` marks the turn a view overflows."""
    counter = TokenCounter()
    out = Replay(strategy.name, workload.name)
    messages: list[Any] = [{"role": "user", "content": workload.request}]
    previous: list[Any] = []
    previous_tokens: list[int] = []
    calls = len(workload.turns) + 1
    for index in range(calls):
        started = time.perf_counter()
        view = strategy.prepare(messages, workload.request)
        out.prepare_ms.append((time.perf_counter() - started) * 1000)
        if check(view):
            out.violations += 1
        sizes = [counter.message(m) for m in view]
        total = sum(sizes) + overhead_tokens
        shared = _common_prefix(view, previous)
        if previous and shared < len(previous):
            out.rewrite_turns += 1
        read = overhead_tokens + sum(sizes[:shared]) if previous else 0
        out.cache_read += read
        out.cache_write += total - read
        out.view_tokens.append(total)
        if window is not None and out.overflow_turn is None and total > window:
            out.overflow_turn = index
        previous, previous_tokens = view, sizes
        if index < len(workload.turns):
            turn = workload.turns[index]
            messages = [*view, turn.assistant, turn.results]
        if on_turn:
            on_turn(index)
    out.turns = len(workload.turns)
    out.calls = calls
    if summarizer is not None:
        out.summary_calls = summarizer.calls
        out.summary_input_tokens = summarizer.input_tokens
        out.summary_output_tokens = summarizer.output_tokens
    if store is not None:
        contents = [b["content"] for t in workload.turns for b in t.results["content"]]
        r = reach(previous, store, root, contents)
        out.in_view, out.recoverable, out.lost = r.in_view, r.recoverable, r.lost
    del previous_tokens
    return out
