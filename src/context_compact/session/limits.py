"""What to say when a request cannot fit: the parts that cannot leave the view, by size.

Two cases: the system prompt and tools alone take the whole limit (no request can be sent,
said at the first call), or after ``max_over_limit`` compactions in a row the view is still
over the limit (the fixed part, the first request, the summary with the user messages
pinned with it and the newest step are what is left: each is named with its size).
Sizes are in the engine's calibrated tokens.
"""

from __future__ import annotations

from dataclasses import replace

from ..sizing import context_window
from .policy import SessionPolicy
from .records import Window
from .state import SessionState

# Of a window the server stated, the share kept free for the reply (at most the policy's
# ``reserve_tokens``): 512 of 2,048, 2,048 of 8,192.
REPLY_SHARE = 0.25
# No model runs in fewer tokens: a smaller window stated is a misreading (or a test's
# scripted refusal), not one to hold every request to.
MIN_WINDOW = 512


def window_limit(policy: SessionPolicy, window: Window) -> int:
    """The most a request may take in ``window``: the window less room for the reply."""
    return max(1, window.tokens - min(policy.reserve_tokens, int(window.tokens * REPLY_SHARE)))


def windowed(policy: SessionPolicy, window: Window | None) -> SessionPolicy:
    """``policy`` with its limit capped by the server's ``window`` (as it is when none)."""
    if window is None:
        return policy
    limit = window_limit(policy, window)
    return policy if limit >= policy.context_limit else replace(policy, context_limit=limit)


def explicit_limit(policy: SessionPolicy) -> bool:
    """Whether ``context_limit`` was set, not derived from the model's window (the default
    ``session_policy`` gives, 192,000 for a model name no table knows)."""
    return policy.context_limit != max(1, context_window(policy.model) - policy.reserve_tokens)


def window_note(policy: SessionPolicy, window: Window | None) -> str:
    """What the ``window`` event says: the window, where it came from, the limit it sets,
    and a warning when an explicit ``context_limit`` was above it."""
    if window is None:
        return ""
    limit = windowed(policy, window).context_limit
    note = (
        f"the model's window is {window.tokens:,} tokens ({window.source}): requests are "
        f"held to {limit:,} tokens, the rest kept for the reply"
    )
    if explicit_limit(policy) and policy.context_limit > limit:
        note += (
            f"; warning: context_limit {policy.context_limit:,} is above what the server "
            "takes, and is lowered"
        )
    elif policy.context_limit <= limit:
        note = (
            f"the model's window is {window.tokens:,} tokens ({window.source}); "
            f"context_limit {policy.context_limit:,} fits in it"
        )
    return note


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


__all__ = [
    "explicit_limit",
    "fixed_part_error",
    "too_big",
    "window_limit",
    "window_note",
    "windowed",
]
