"""The current request in a summary message: stated once.

Under the default engine the user's messages stay pinned in view verbatim (the first request
always, the newest always). Repeating the current request in full in the summary message
would send it twice on every request; so when a user message in view holds it verbatim, the
summary points at that message instead (``markers.request_kept``). The full text stays when
no message in view holds it (it was folded into the summary, or never typed as a message)
or when it is shorter than the reference. The seed keeps its exact S-4.4 text.
"""

from __future__ import annotations

from .. import markers
from ..messages import Message, block_type, blocks, is_request
from .state import SessionState


def words_of(message: Message) -> str:
    """A user message's text as typed: its string, or its text blocks joined."""
    content = message.get("content")
    if isinstance(content, str):
        return content.strip()
    return "\n".join(
        str(b.get("text", "")) for b in blocks(message) if block_type(b) == "text"
    ).strip()


def request_shown(state: SessionState, request: str, pins: list[int], cut: int) -> str:
    """What the summary says under "Current user request": a reference to the user message
    that holds the request verbatim when the view keeps it (the first request, a pinned one,
    or one in the kept turns) and the reference is the shorter, else the request in full (it
    was folded, never typed, or shorter than a reference)."""
    wanted = request.strip()
    first = state.first_request
    kept: str | None = None
    if first is not None and words_of(state.msgs[first]) == wanted:
        kept = markers.request_kept(first, first=True)
    else:
        for seq in reversed([*pins, *range(cut, state.n)]):
            message = state.msgs.get(seq)
            held = message is not None and is_request(message) and words_of(message) == wanted
            if seq != first and held:
                kept = markers.request_kept(seq, first=False)
                break
    return kept if kept is not None and len(kept) < len(request) else request


__all__ = ["request_shown", "words_of"]
