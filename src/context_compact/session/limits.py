"""What to say when a request cannot fit: the parts that cannot leave the view, by size.

Two cases: the system prompt and tools alone take the whole limit (no request can be sent,
said at the first call), or after ``max_over_limit`` compactions in a row the view is still
over the limit (the fixed part, the first request, the summary with the user messages
pinned with it and the newest step are what is left: each is named with its size).
Sizes are in the engine's calibrated tokens.
"""

from __future__ import annotations

from .state import SessionState


def fixed_part_error(state: SessionState, limit: int) -> str | None:
    """The error when the system prompt and tools alone are over ``limit``, else None."""
    overhead = round(state.overhead * state.ratio)
    if overhead < limit:
        return None
    return (
        f"the system prompt and tools take {overhead:,} tokens, more than the context "
        f"limit of {limit:,} tokens: no request fits. Raise context_limit or "
        "shorten the system prompt or the tool schemas."
    )


def too_big(state: SessionState, size: int, limit: int, times: int) -> str:
    """What alone keeps the request over the limit, by name and size."""
    ratio = state.ratio
    first = state.first_request
    last = state.last_assistant()
    step = list(range(max(last, state.first_kept), state.n))
    step_tokens = round(sum(state.shown.tokens[state.view_index(seq)] for seq in step) * ratio)
    parts = [f"the system prompt and tools take {round(state.overhead * ratio):,}"]
    prefix = state.shown.tokens[: len(state.prefix)]
    pinned_first = bool(prefix) and first is not None and first in state.pinned.pins
    if first is not None:
        shown = prefix[0] if pinned_first else state.counter.count(state.msgs[first])
        parts.append(f"the first request (message {first}) {round(shown * ratio):,}")
    if prefix:
        # The summary (and the user messages pinned with it) must fit as well.
        rest = round((sum(prefix) - (prefix[0] if pinned_first else 0)) * ratio)
        pins = len([seq for seq in state.pinned.pins if seq != first])
        pinned = f" and {pins} pinned user message{'s' * (pins != 1)}" if pins else ""
        parts.append(f"the summary{pinned} {rest:,}")
    if step:
        parts.append(f"the newest step (messages {step[0]}-{step[-1]}) {step_tokens:,}")
    return (
        f"the context is still over its limit ({size:,} > {limit:,} tokens) after "
        f"{times} compactions in a row: {'; '.join(parts)} tokens, and none of "
        "these can leave the view. Raise context_limit, shorten what is too big, or lower "
        "batch_budget so that new results are saved with a preview."
    )


__all__ = ["fixed_part_error", "too_big"]
