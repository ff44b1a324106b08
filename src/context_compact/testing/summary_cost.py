"""Summary requests priced as they are sent: the prefix they repeat is a cache read.

A summary request that continues the agent's own request (``LLMSummarizer(continue_cache=
True)``: the view up to the summary's cut, then the instruction) and a provider's compaction
request (the messages it replaces, as sent, with the conversation's system prompt and tools)
start with what the agent's previous request sent. A prompt cache holds that prefix, so the
provider bills it at the cache-read rate; only what follows it is new input. A summarizer that
makes such a request records it in ``sends`` (the request's messages, and the tokens of what
follows them); ``replay`` prices each against the request sent just before it (``price_send``).

Invariants (``tests/bench/test_summary_cost.py``): the cached part never exceeds the request;
with no earlier request nothing is cached, so the price as sent equals the plain price; a
request the cache cannot serve (its first message differs) reads only the fixed prefix (system
prompt and tools). The part after the shared prefix is priced as plain input, not as a cache
write: nothing later reads it (the summary replaces it), so the bench sets no breakpoint there.
A summary made from a transcript (no ``sent``) shares nothing and stays plain input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..sizing import text_tokens
from ..summary.contract import Summarizes, SummaryRequest, adapt, text_of
from ..summary.llm import continuing_instruction

Send = tuple[list[Any], int]
"""A summary request as sent: its messages in order, and the tokens that follow them."""


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading messages ``a`` and ``b`` share (the same object, or equal)."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x is not y and x != y:
            break
        n += 1
    return n


def price_send(
    send: Send,
    previous: Sequence[Any],
    previous_sizes: Sequence[int],
    sizes: Sequence[int],
    overhead: int,
) -> tuple[int, int]:
    """``(input, cached)`` tokens of one summary request: its whole input (``overhead``, the
    system prompt and tools, its messages of ``sizes`` and what follows them) and the part read
    from the cache the previous request (``previous``, of ``previous_sizes``) wrote: the fixed
    prefix and the messages both start with. Nothing is cached before a first request."""
    messages, extra = send
    total = overhead + sum(sizes) + extra
    if not previous:
        return total, 0
    shared = common_prefix(messages, previous)
    return total, overhead + sum(previous_sizes[:shared])


class ContinuingSummarizer:
    """The bench's summarizer (``BenchSummarizer``) as ``LLMSummarizer(continue_cache=True)``
    asks: given the view as sent, the request is that view plus the instruction, recorded in
    the inner summarizer's ``sends`` for the replay to price instead of the transcript it
    counted. The summary's text is the inner one's; without ``sent`` it is the inner call."""

    continue_cache = True

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.adapted: Summarizes = adapt(inner)

    def summarize(self, ask: SummaryRequest) -> str:
        if not ask.sent:
            return str(text_of(self.adapted.summarize(ask)))
        before = self.inner.input_tokens
        text = str(text_of(self.adapted.summarize(ask)))
        self.inner.input_tokens = before  # priced from ``sends`` instead
        instruction = continuing_instruction(ask.budget or 2_000, ask.focus, ask.prompt)
        self.inner.sends.append((list(ask.sent), text_tokens(instruction)))
        return text


__all__ = ["ContinuingSummarizer", "Send", "common_prefix", "price_send"]
