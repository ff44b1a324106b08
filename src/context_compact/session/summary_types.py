"""What a summary is asked for and what it decides: the data its three steps pass along.

``SummaryAsk`` is what the engine asks of a summary (how small the request should get, how
much it must free, how many recent turns to keep); ``SummaryPlan`` what ``summary_plan.plan``
decides from the state alone (``start``, ``cut``, the ``UserWords`` kept in view, the
``carry`` of a closing plan); ``SummaryEffects`` what the store and the summarizer gave back
for a plan, which ``summary.edit`` turns into the journal record (``summary.py``).

Invariant: all are frozen values; ``carry`` is ``None`` unless the plan closes the turn.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..messages import Block, Message
from .exports import Export

# Tokens we expect a summary message to take, at most (the summary call is capped at
# ``summary_budget``; the engine passes the smaller of the two).
SUMMARY_ALLOWANCE = 800


@dataclass(frozen=True)
class UserWords:
    """The user messages a summary up to some cut keeps in view, and those it folds in."""

    pins: list[int]
    answered: dict[int, str]
    folded: list[int]
    tokens: int


@dataclass(frozen=True)
class SummaryAsk:
    """What the engine asks of a summary."""

    target: int
    """Tokens the request should measure after it (the low-water mark, or 0: all)."""
    least: int
    """Tokens it must free to be worth the cache it breaks."""
    request: str
    keep_turns: int
    """At most this many recent turns kept (or carried) verbatim, fewer when they do not fit
    (``plan``); 0 summarizes all but what is unseen."""
    limit: int
    """The context limit: a kept part over it is never chosen."""
    pin_budget: float
    answered_chars: int
    allowance: int = SUMMARY_ALLOWANCE
    instructions: str | None = None
    label: str = "Compacted"
    ledger_tokens: int = 0
    """Most tokens of the ledger's rendering the summary message carries (0: none)."""
    handoff: bool = False
    """No summarizer call: the summary's text is ``markers.HANDOFF`` (``policy.handoff``)."""
    notes_tokens: int = 0
    """Most tokens of the agent's notes the summary message carries (0: none, and no notes
    file)."""


@dataclass(frozen=True)
class SummaryPlan:
    start: int
    cut: int
    words: UserWords
    carry: int | None
    """First log message carried verbatim in the closing message (closing plans only)."""
    first_media: bool = False
    """The first request's images and documents are saved as files (``_media_in_the_way``)."""

    @property
    def closes(self) -> bool:
        return self.carry is not None


@dataclass(frozen=True)
class SummaryEffects:
    archive: str
    exports: list[Export]
    text: str
    index: str
    score: dict[str, float | None]
    """``summary_score`` of ``text`` against what the summarizer was given."""
    first: Message | None = None
    """The first request with its images and documents saved as files (``first_media``)."""
    block: Block | None = None
    """The provider's compaction block standing for the replaced messages (``native_tier``);
    ``text`` is then our readable summary of them, saved at ``readable``."""
    readable: str | None = None
    notes: str | None = None
    """The file holding every note of the agent's so far (``notes.py``), None without notes."""
    ledger: str | None = None
    """The file holding the whole ledger (``ledger_view.full``), None when the summary
    carries none."""


__all__ = ["SUMMARY_ALLOWANCE", "SummaryAsk", "SummaryEffects", "SummaryPlan", "UserWords"]
