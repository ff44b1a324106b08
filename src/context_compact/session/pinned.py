"""What the summaries put before the kept messages: the summary, the pinned user words.

    prefix = [compaction block] + [first request] + [summary message] + pinned user messages
             older than the cut (each after the assistant text it answered) + [closing message
             of recent steps]

The compaction block is the provider's, returned by a compaction request of ours
(``native_tier.py``): the API drops what comes before one, so it goes first, unchanged, and
stays there through the summaries of ours that follow until a newer block replaces it.

Pinned user messages (``pins``, oldest first, the newest always among them) are the user's
own words, verbatim (but the first request's images and documents, saved as files once they
alone kept it from fitting: ``first``); ``answered`` holds the short assistant text each
answered, kept as data since that message leaves memory; ``pin_archive`` the archive
holding each; ``folded`` the user messages folded into the summary (message number,
archive), the newest ``FOLDED_NAMED`` by name and ``folded_more`` counted. Only a summary
edit changes them.
"""

from __future__ import annotations

from collections.abc import Callable

from ..messages import Message, compaction_at
from .records import SummaryEdit


def answer_message(text: str) -> Message:
    """The assistant text a pinned user message answered, as it stands before it in view."""
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


class Pinned:
    def __init__(self) -> None:
        self.summary: Message | None = None
        self.summary_text: str | None = None
        self.summaries = 0
        self.pins: list[int] = []
        self.answered: dict[int, str] = {}
        self.pin_archive: dict[int, str] = {}
        self.folded: list[tuple[int, str]] = []
        self.folded_more = 0
        self.prefix: list[Message] = []
        self.first: Message | None = None
        self.block: Message | None = None

    def apply(
        self,
        edit: SummaryEdit,
        logged: Callable[[int], bool],
        render: Callable[[int], Message],
        first_request: int | None,
    ) -> None:
        """Take the summary ``edit``; ``logged(seq)`` says which pins are still in memory."""
        self.summary = edit.message
        content = edit.message.get("content")
        # Journals older than the ``text`` field: the summary message's own text.
        fallback = content if isinstance(content, str) else None
        self.summary_text = edit.text if edit.text is not None else fallback
        self.summaries += 1
        pins = [seq for seq in edit.pins if logged(seq)]
        self.pins = pins
        self.answered = {seq: edit.answered[seq] for seq in pins if seq in edit.answered}
        self.pin_archive = {
            seq: edit.archive if seq >= edit.start else self.pin_archive.get(seq, "")
            for seq in pins
            if seq != first_request
        }
        self.folded = list(edit.folded)
        self.folded_more = edit.folded_more
        if edit.first is not None:
            self.first = edit.first
        head = [self.first or render(seq) for seq in pins if seq == first_request]
        if edit.block is not None:
            self.block = {"role": "assistant", "content": [edit.block.copy()]}
            # An adopted block in the head is older than the one the edit brings: it goes.
            head = [m for m in head if compaction_at(m) is None]
        tail: list[Message] = []
        for seq in pins:
            if seq == first_request:
                continue
            if seq in self.answered:
                tail.append(answer_message(self.answered[seq]))
            tail.append(render(seq))
        carry = [edit.carry] if edit.carry is not None else []
        block = [self.block] if self.block is not None else []
        self.prefix = [*block, *head, self.summary, *tail, *carry]


__all__ = ["Pinned", "answer_message"]
