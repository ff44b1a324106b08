"""Replay a session through a strategy, turn by turn, the way the seed's loop drives it.

    messages = head                                   # the user's request
    for each call:  messages = strategy.prepare(messages, request)   # what is sent
                    messages += step                  # assistant turn, tool results

Per call we record the tokens sent (system prompt and tool schemas included), how much of
the request is a prefix of the previous one (what a prompt cache can reuse) and whether
earlier history was rewritten, and how long ``prepare`` took. After each request the API would
accept, the strategy is told its size (``observe``, when it has one), as an agent loop tells
its compactor the usage the API reported: the bench's count stands for the API's. Cost follows
Anthropic's prompt-caching multipliers (cache reads 0.1x base input, cache writes 1.25x: Anthropic
"Prompt caching" docs, 2025): the shared prefix is read, the rest is written (a cache
breakpoint at the end of every request, as agent loops set it). Summary calls are priced as
input plus output; a summary request that continues the previous request (the summarizer's
``sends``) reads its shared prefix from the cache (``summary_cost.py``: ``summary_cached_tokens``
of ``summary_input_tokens``); the assistant's own replies are output tokens.

A ``Workload`` (synthetic) or a ``Script`` (any session, see ``script.py``) can be replayed.
At the end, every needle (planted fact, or full tool-result text) is classified by
``reach``: in the final view, recoverable through references the store issued, or lost.
Two measures of what the model still knows of the task: ``user_kept`` of ``user_messages``,
the user's own messages (text, no tool results) that are in the final view verbatim, and
``summary_retention``, the mean ``summary_score`` of the summaries made (against what each
summary was given; None when the summarizer keeps no scores or made no summary).
``api_refusals`` counts the requests the Messages API would refuse (``api_check``: tool pairs
whole; with the script's ``thinking`` on, the final turn opens with thinking, thinking blocks
unmodified), of the calls that would send one (not the final call of a recording that ends
on the model's own message); ``first_refusal`` says which call and why; with thinking on,
``turn_starts`` counts the calls whose reply opens a new assistant turn (and so thinks first).
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..invariants import check
from ..keys import canonical
from ..messages import is_request
from ..sizing import TokenCounter
from ..store.base import Store
from .api_check import final_turn_opener, refusal
from .reach import reach
from .script import Script, as_script
from .summary_cost import common_prefix, price_send
from .workload import Workload


class Strategy(Protocol):
    @property
    def name(self) -> str: ...

    def prepare(self, messages: list[Any], active_request: str) -> list[Any]: ...

    # Optional: ``observe(prompt_tokens)``, the API's count of the request returned last.


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
    api_refusals: int = 0
    first_refusal: str | None = None
    turn_starts: int = 0
    prepare_ms: list[float] = field(default_factory=list)
    summary_calls: int = 0
    summary_input_tokens: int = 0
    summary_output_tokens: int = 0
    summary_cached_tokens: int = 0
    output_tokens: int = 0
    overflow_turn: int | None = None
    over_budget_calls: int = 0
    in_view: int = 0
    recoverable: int = 0
    lost: int = 0
    needles: int = 0
    user_messages: int = 0
    user_kept: int = 0
    summary_retention: float | None = None
    error: str | None = None

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
        """Input cost in base-input-token units: reads 0.1x, writes 1.25x, summaries 1x
        (their cached prefix 0.1x)."""
        cached = self.summary_cached_tokens
        summaries = self.summary_input_tokens - cached + 0.1 * cached
        return 0.1 * self.cache_read + 1.25 * self.cache_write + summaries

    def p(self, q: float) -> float:
        """The ``q`` quantile of prepare times (nearest rank), in ms."""
        if not self.prepare_ms:
            return 0.0
        ordered = sorted(self.prepare_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @property
    def p50_ms(self) -> float:
        return statistics.median(self.prepare_ms) if self.prepare_ms else 0.0

    @property
    def p99_ms(self) -> float:
        return self.p(0.99)


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else getattr(message, "role", None)


def replay(
    strategy: Strategy,
    workload: Workload | Script,
    *,
    store: Store | None = None,
    root: str = "",
    overhead_tokens: int = 2_000,
    window: int | None = None,
    summarizer: Any = None,
    on_turn: Callable[[int], None] | None = None,
    on_call: Callable[[list[Any], list[Any], list[Any]], None] | None = None,
) -> Replay:
    """Drive ``strategy`` through ``workload``; ``window`` marks the calls a view overflows;
    ``on_call(appended, given, view)`` sees each call: what the loop appended since the last
    one, the history it gave ``prepare`` and the view it got back (``probing`` reads it)."""
    script = as_script(workload)
    counter = TokenCounter()
    out = Replay(strategy.name, script.name)
    messages: list[Any] = list(script.head)
    previous: list[Any] = []
    previous_sizes: list[int] = []
    sends = getattr(summarizer, "sends", None)
    sent_input = 0
    appended: list[Any] = list(script.head)
    calls = script.turns + 1
    for index in range(calls):
        started = time.perf_counter()
        try:
            view = strategy.prepare(messages, script.requests[index])
        except Exception as error:  # a strategy that gives up ends its session here
            out.error = f"call {index}: {type(error).__name__}: {error}"
            out.calls = index
            break
        out.prepare_ms.append((time.perf_counter() - started) * 1000)
        if on_call is not None:
            on_call(appended, messages, view)
        if check(view):
            out.violations += 1
        # A recording that stops on the model's own message (an agent stopped mid-call) sends
        # no request after it: its final view is checked for what it keeps, not as a request.
        sent = index < calls - 1 or not messages or _role(messages[-1]) != "assistant"
        refused = refusal(view, thinking=script.thinking) if sent else None
        if refused is not None:
            out.api_refusals += 1
            if out.first_refusal is None:
                out.first_refusal = f"call {index}: {refused}"
        if script.thinking and final_turn_opener(view) is None:
            out.turn_starts += 1
        for send in sends or ():  # made by this prepare: it continues the previous request
            size = [counter.message(m) for m in send[0]]
            whole, cached = price_send(send, previous, previous_sizes, size, overhead_tokens)
            sent_input += whole
            out.summary_cached_tokens += cached
        if sends:
            sends.clear()
        sizes = [counter.message(m) for m in view]
        total = sum(sizes) + overhead_tokens
        shared = common_prefix(view, previous)
        if previous and shared < len(previous):
            out.rewrite_turns += 1
        read = overhead_tokens + sum(sizes[:shared]) if previous else 0
        out.cache_read += read
        out.cache_write += total - read
        out.view_tokens.append(total)
        if window is not None and total > window:
            out.over_budget_calls += 1
            if out.overflow_turn is None:
                out.overflow_turn = index
        # Every real loop reports the API's count of each request it sent (``observe``: our
        # drop-in clients, adapters and agent do); the bench's own count is that count here. A
        # request the API would refuse (a broken pair, over the window) has no usage to report.
        observe = getattr(strategy, "observe", None)
        fits = window is None or total <= window
        if observe is not None and sent and refused is None and fits:
            observe(total)
        previous, previous_sizes = view, sizes
        if index < script.turns:
            step = script.step(index, view)
            out.output_tokens += sum(counter.message(m) for m in step if m["role"] == "assistant")
            messages = [*view, *step]
            appended = list(step)
        if on_turn:
            on_turn(index)
    else:
        out.calls = calls
    out.turns = script.turns
    if summarizer is not None:
        out.summary_calls = summarizer.calls
        out.summary_input_tokens = summarizer.input_tokens + sent_input
        out.summary_output_tokens = summarizer.output_tokens
    out.needles = len(script.needles)
    # The steps in the last view: all of them, or those before the call that gave up.
    fed = script.steps[: out.calls - 1] if out.error else script.steps
    given = [*script.head, *(m for step in fed for m in step)]
    typed = [canonical(m) for m in given if is_request(m)]
    shown = Counter(canonical(m) for m in previous if isinstance(m, dict))
    out.user_messages = len(typed)
    out.user_kept = sum((Counter(typed) & shown).values())
    out.summary_retention = getattr(summarizer, "retention", None)
    if store is not None or script.needles:
        r = reach(previous, store, root, script.needles, script.pattern)
        out.in_view, out.recoverable, out.lost = r.in_view, r.recoverable, r.lost
    return out
