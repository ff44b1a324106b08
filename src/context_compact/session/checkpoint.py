"""Checkpoints: the session's derived state as one journal record, so a resume need not replay.

A checkpoint record (kind ``checkpoint``) holds what ``SessionState`` built from the records
before it: the log tail in memory, the edits, the prefix, the view with its keys and counts,
the calibration (the counter's factors too), the ledger and the notes (when they hold
anything), and the journal's counters. Resuming reads the newest checkpoint and applies only
the records after it (``durable.py``); every other reader reads it as a record of an unknown
kind that changes nothing, so a full replay is unchanged.

Invariants:

* ``restore(capture(state, at, events), counter, at)`` is a state whose next view, estimate
  and passes are those of ``state``, byte for byte: nothing is recounted (the tokens are
  the ones counted live, with the factors of then), only the JSON of view entries counted
  on their own content is encoded again (it is that content's ``to_json``).
* A checkpoint says where it stands (``at``: its own position in the journal; ``head``: the
  chain id of the last message it covers) and carries a hash of its state: one read at
  another position, or whose state does not hash to what it carries, or of a format this
  version does not know, is ``BadRecord`` and the reader falls back to an older checkpoint
  or to a full replay. The store's hash chain covers the record like any other.
* Its size is O(view): a view entry equal to what ``render`` makes of its message is stored
  as that message's position, not again.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..messages import Message
from ..sizing import TokenCounter
from ..sizing.counter import to_json
from ..store.journal import Encoded, dumps
from .ledger import Ledger
from .ledger_rules import LedgerRules
from .notes import Notes
from .pinned import Pinned
from .records import BadRecord, NativeEdit, Window, as_json, read
from .shown import Shown
from .state import Replaced, SessionState
from .turn import Turn

KIND = "checkpoint"
VERSION = 2
# Formats read: 1 also carried every tool_use id of the conversation (now built when a caller
# first passes its full history, ``SessionState.log_ids``); it restores the same state.
READS = (1, 2)
EVERY = 128
"""Records between two checkpoints: a resume applies at most this many after the newest."""


def _digest(state: dict[str, Any], text: str | None = None) -> str:
    data = (text if text is not None else dumps(state)).encode("ascii")
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def capture(state: SessionState, at: int, events: int) -> dict[str, Any]:
    """The checkpoint record of ``state`` to be appended at position ``at``, ``events``
    event records before it."""
    shown, pinned = state.shown, state.pinned
    k = len(pinned.prefix)
    view: list[Any] = []
    for index, message in enumerate(shown.messages):
        if index < k and message is pinned.prefix[index]:
            view.append(None)
            continue
        seq = index - k + state.first_kept
        if index >= k and seq in state.msgs:
            rendered = state.render(seq)
            if message == rendered and list(message) == list(rendered):
                view.append(seq)
                continue
        view.append(message)
    body: dict[str, Any] = {
        "n": state.n,
        "base": state.base,
        "head": state.head,
        "overhead": state.overhead,
        "ratio": state.ratio,
        "anchor": list(state.anchor) if state.anchor is not None else None,
        "ahead": list(state.ahead) if state.ahead is not None else None,
        "factors": dict(state.counter.calibration.factors) if state.counter.calibrates else None,
        "msgs": [[seq, m] for seq, m in state.msgs.items()],
        "first_kept": state.first_kept,
        "first_request": state.first_request,
        "latest_request": state.latest_request,
        "turn": [
            state.turn.first,
            state.turn.thinks,
            state.turn._run_ends_turn,
            state.turn._run_open,
        ],
        "replaced": [
            [
                [p[0], p[1], b, state.replaced.copies.get(p)]
                for p, b in state.replaced.blocks.items()
            ],
            sorted(state.replaced.cleared),
            sorted(state.replaced.cleared_inputs),
            [
                [p[0], p[1], c]
                for p, c in state.replaced.copies.items()
                if p not in state.replaced.blocks
            ],
        ],
        "pinned": {
            "summary": pinned.summary,
            "summary_text": pinned.summary_text,
            "summaries": pinned.summaries,
            "pins": pinned.pins,
            "answered": [[s, t] for s, t in pinned.answered.items()],
            "pin_archive": [[s, a] for s, a in pinned.pin_archive.items()],
            "folded": [list(f) for f in pinned.folded],
            "folded_more": pinned.folded_more,
            "prefix": pinned.prefix,
            "first": pinned.first,
            "block": pinned.block,
        },
        "result_sizes": [[p[0], p[1], t, c] for p, (t, c) in state.result_sizes.items()],
        "answers": state._answers,
        "results": [list(p) for p in state._results],
        "view": view,
        "keys": shown.keys,
        "tokens": shown.tokens,
        "own": [t is not None for t in shown.texts],
        "shared": sorted(shown.shared),
        "use_ids": sorted(shown.use_ids),
        "calibrated": state.calibrated,
        "native_seen": list(state.native_seen) if state.native_seen is not None else None,
        "native": as_json(state.native) if state.native is not None else None,
        "native_note_at": state.native_note_at,
        "window": as_json(state.window) if state.window is not None else None,
        "events": events,
    }
    # Only sessions that have them carry these: every other checkpoint is as it was.
    if state.settings:
        body["settings"] = dict(state.settings)
    if state.stripped:
        body["stripped"] = [list(s) for s in state.stripped]
    if state.ledger:
        body["ledger"] = state.ledger.as_json()
    if state.notes:
        body["notes"] = state.notes.as_json()
    # The state's JSON is made once, for its digest and for the store (``Encoded``).
    text = dumps(body)
    digest = _digest(body, text)
    record = Encoded(kind=KIND, version=VERSION, at=at, digest=digest, state=body)
    head = dumps({"kind": KIND, "version": VERSION, "at": at, "digest": digest})
    record.maker = lambda: f'{head[:-1]},"state":{text}}}'
    return record


def restore(
    raw: dict[str, Any], counter: TokenCounter, at: int, ledger: LedgerRules | None = None
) -> tuple[SessionState, int]:
    """The state a checkpoint read at position ``at`` holds, and the event records before
    it; ``BadRecord`` when it is not one this version can trust there."""
    where = f"checkpoint at record {at}"
    if raw.get("version") not in READS:
        raise BadRecord(f"{where}: format {raw.get('version')!r} is not one of {READS}")
    if raw.get("at") != at:
        raise BadRecord(f"{where}: it was written for record {raw.get('at')!r}")
    body = raw.get("state")
    if not isinstance(body, dict) or raw.get("digest") != _digest(body):
        raise BadRecord(f"{where}: its state does not hash to the digest it carries")
    try:
        return _restore(body, counter, ledger), int(body["events"])
    except (KeyError, TypeError, IndexError, ValueError, AttributeError) as error:
        raise BadRecord(f"{where} is malformed: {error!r}") from None


def _restore(
    body: dict[str, Any], counter: TokenCounter, rules: LedgerRules | None
) -> SessionState:
    if body["factors"] is not None:
        counter.set_factors(body["factors"])
    state = SessionState(counter, rules)
    state.n = body["n"]
    state.reset()
    state.base = body["base"]
    state.head = body["head"]
    state.overhead = body["overhead"]
    state.ratio = body["ratio"]
    anchor = body["anchor"]
    state.anchor = (int(anchor[0]), int(anchor[1])) if anchor is not None else None
    ahead = body.get("ahead")
    state.ahead = (int(ahead[0]), int(ahead[1])) if ahead is not None else None
    state.msgs = {int(seq): m for seq, m in body["msgs"]}
    state.first_kept = body["first_kept"]
    state.first_request = body["first_request"]
    state.latest_request = body["latest_request"]
    turn = Turn()
    turn.first, turn.thinks, turn._run_ends_turn, turn._run_open = body["turn"]
    state.turn = turn
    replaced = Replaced()
    blocks, cleared, cleared_inputs, copies = body["replaced"]
    for seq, bi, block, copy_ in blocks:
        replaced.blocks[(seq, bi)] = block
        if copy_ is not None:
            replaced.copies[(seq, bi)] = copy_
    for seq, bi, copy_ in copies:
        replaced.copies[(seq, bi)] = copy_
    replaced.cleared = {(s, b) for s, b in cleared}
    replaced.cleared_inputs = {(s, b) for s, b in cleared_inputs}
    state.replaced = replaced
    state.pinned = _pinned(body["pinned"])
    state.result_sizes = {(s, b): (t, c) for s, b, t, c in body["result_sizes"]}
    state._answers = list(body["answers"])
    state._results = [(s, b) for s, b in body["results"]]
    # What ``render`` reads (a native block's note) before the view is rendered again.
    state.calibrated = bool(body["calibrated"])
    seen = body["native_seen"]
    state.native_seen = (int(seen[0]), int(seen[1])) if seen is not None else None
    native = read(body["native"], "checkpoint's native edit") if body["native"] else None
    if native is not None and not isinstance(native, NativeEdit):
        raise ValueError(f"not a native edit: {body['native']!r:.100}")
    state.native = native
    state.native_note_at = body["native_note_at"]
    window = read(body["window"], "checkpoint's window") if body["window"] else None
    if window is not None and not isinstance(window, Window):
        raise ValueError(f"not a window: {body['window']!r:.100}")
    state.window = window
    state.settings = dict(body.get("settings") or {})
    state.stripped = [(int(a), int(b), int(c)) for a, b, c in body.get("stripped") or ()]
    state.ledger = Ledger.from_json(body.get("ledger"), state.ledger_rules)
    state.notes = Notes.from_json(body.get("notes"))
    state.shown = _shown(body, state, counter)
    return state


def _pinned(raw: dict[str, Any]) -> Pinned:
    pinned = Pinned()
    pinned.summary = raw["summary"]
    pinned.summary_text = raw["summary_text"]
    pinned.summaries = raw["summaries"]
    pinned.pins = list(raw["pins"])
    pinned.answered = {int(s): t for s, t in raw["answered"]}
    pinned.pin_archive = {int(s): a for s, a in raw["pin_archive"]}
    pinned.folded = [(int(s), str(a)) for s, a in raw["folded"]]
    pinned.folded_more = raw["folded_more"]
    pinned.prefix = list(raw["prefix"])
    pinned.first = raw["first"]
    pinned.block = raw.get("block")
    return pinned


def _shown(body: dict[str, Any], state: SessionState, counter: TokenCounter) -> Shown:
    shown = Shown(counter)
    prefix = state.pinned.prefix
    messages: list[Message] = []
    for index, entry in enumerate(body["view"]):
        if entry is None:
            messages.append(prefix[index])
        elif isinstance(entry, int) and not isinstance(entry, bool):
            messages.append(state.render(entry))
        else:
            messages.append(entry)
    keys, tokens, own = list(body["keys"]), list(body["tokens"]), body["own"]
    if not len(messages) == len(keys) == len(tokens) == len(own):
        raise ValueError("the view's messages, keys and counts differ in number")
    shown.messages = messages
    shown.keys = keys
    shown.tokens = tokens
    shown.texts = [
        to_json(m.get("content")) if o else None for m, o in zip(messages, own, strict=True)
    ]
    shown.shared = set(body["shared"])
    shown.total = sum(tokens)
    shown.use_ids = set(body["use_ids"])
    return shown


__all__ = ["EVERY", "KIND", "capture", "restore"]
