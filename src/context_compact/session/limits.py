"""What to say when a request cannot fit: the parts that cannot leave the view, by size.

Two cases: the system prompt and tools alone take the whole limit (no request can be sent,
said at the first call), or after ``max_over_limit`` compactions in a row the view is still
over the limit (the first request, the newest step and the fixed part are what is left).
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
    if first is not None:
        first_tokens = round(state.counter.count(state.msgs[first]) * ratio)
        parts.append(f"the first request (message {first}) {first_tokens:,}")
    if step:
        parts.append(f"the newest step (messages {step[0]}-{step[-1]}) {step_tokens:,}")
    return (
        f"the context is still over its limit ({size:,} > {limit:,} tokens) after "
        f"{times} compactions in a row: {'; '.join(parts)} tokens, and none of "
        "these can leave the view. Raise context_limit, shorten what is too big, or lower "
        "batch_budget so that new results are saved with a preview."
    )


__all__ = ["fixed_part_error", "too_big"]
