"""Undoing a compaction: a new record in the log, the view rebuilt as if it had not happened.

``Undo(record)`` names the compaction it undoes (a summary or a clearing) by its position in
the journal. The state that follows is the one the journal's records build when the undone
edits are left out (``rebuild``): the messages that came since, the persists of their new
results, the calibrations, stay; the undo itself then drops what measured the view it
replaced (``SessionState.apply``: the API's count of its head, a range fixed ahead). A
resumed session that meets an undo builds its state the same way, so it sends the same view.

Invariants: nothing is deleted (the undone edit, its event and its files stay in the journal
and the store, and ``inspect`` shows them); only the newest compaction not undone yet of the
current conversation can be undone (``target``), one at a time, newest first; an undo whose
view would be over the limit is refused and changes nothing (``UndoRefused``).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import UndoRefused
from ..keys import content_key
from ..sizing import TokenCounter
from .ledger_rules import LedgerRules
from .records import BlockEdit, MessageRecord, Read, Restart, SummaryEdit, Undo
from .state import SessionState


def compaction(record: Read) -> str | None:
    """What ``record`` is, if it is a compaction an undo may take back."""
    if isinstance(record, SummaryEdit):
        return f"summary of messages {record.start}-{record.cut - 1}"
    if isinstance(record, BlockEdit) and record.op == "clear":
        return f"clearing of {len(record.blocks)} results"
    return None


def target(records: Iterable[Read], session: str) -> tuple[int, str]:
    """The position of the newest compaction not undone yet, and what it is."""
    undone: set[int] = set()
    found: list[tuple[int, str]] = []
    for at, record in enumerate(records):
        if isinstance(record, Restart):
            found = []
        elif isinstance(record, Undo):
            undone.add(record.record)
        else:
            what = compaction(record)
            if what is not None:
                found.append((at, what))
    for at, what in reversed(found):
        if at not in undone:
            return at, what
    raise UndoRefused(f"session {session!r} has no compaction left to undo in its conversation")


def undone(records: Iterable[Read]) -> set[int]:
    """The positions of the edits the journal's undos undid."""
    return {r.record for r in records if isinstance(r, Undo)}


def apply(state: SessionState, record: Read) -> None:
    if isinstance(record, MessageRecord):
        state.add_message(record, content_key(record.message))
    else:
        state.apply(record)


def rebuild(
    counter: TokenCounter,
    records: Iterable[Read],
    skip: set[int],
    ledger: LedgerRules | None = None,
) -> SessionState:
    """The state ``records`` build with those at the positions ``skip`` left out."""
    state = SessionState(counter, ledger)
    for at, record in enumerate(records):
        if at not in skip:
            apply(state, record)
    return state


__all__ = ["apply", "compaction", "rebuild", "target", "undone"]
