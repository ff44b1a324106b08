"""The session journal's records, typed: what each one holds, and the one reader of them all.

A session's journal is an append-only list of records, in the order things happened:

* ``MessageRecord``: one more logged message (its position ``seq``, its id chained to its
  parent's, a private copy of the message);
* ``BlockEdit`` (op ``persist`` or ``clear``): result blocks replaced by a preview or a
  marker, each ``BlockCopy`` naming the file that holds the full text; a clearing may also
  replace the input of the calls whose results it cleared (``clear_tool_inputs``), each
  ``InputCopy`` naming the line of the file that holds the original input (stored as
  ``inputs``, only when there are any);
* ``SummaryEdit``: messages ``start .. cut-1`` replaced by a summary message, with the
  pinned user messages, the folded ones and, when the summary closed the turn, the closing
  message of recent steps; with ``block``, the provider's compaction block that a compaction
  request of ours returned (``native_tier.py``), sent first, unchanged, before that prefix;
* ``NativeEdit`` (op ``native``): the provider's own compaction block (Anthropic's
  ``compaction`` block, an OpenAI Responses ``compaction`` item) in message ``cut`` at
  ``block`` now stands for everything before it: the view starts at the block; what it
  replaced is archived (``archive``, messages ``start .. cut-1``), with a readable summary of
  ours (``text``) and the note the view carries naming both (``note``);
* ``Calibrate`` (real/estimated ratio and the API's count of the view's head), ``Overhead``
  (system prompt and tools), ``Restart`` (a new conversation on the same log);
* ``AheadMark``: the range the next summary replaces, fixed when the request passed the
  soft mark (``ahead.py``: its summary is made ahead of need, and applied at the trigger
  while the range stays valid);
* ``Undo``: the compaction journaled at record ``record`` (a summary or a clearing) is
  undone: the view is rebuilt as if it had not happened (``undo.py``); the undone edit
  stays in the journal;
* ``Window``: the model's context window as the server stated it (its own report or a
  refusal's "maximum context length is N"), which caps the limit from then on;
* ``Strip``: the thinking blocks logged so far from one block on leave the view for good (a
  change before them broke their binding to their prefix: ``thinking.py``);
* ``Setting``: a per-session decision (preserved thinking learned, native compaction off,
  the prefix-mismatch behavior asked for), so a resume decides as the stopped process did;
* ``EventRecord``: what a compaction did, as the caller's ``CompactionEvent`` said it.

Invariants: ``as_json(read(raw)) == raw`` for every record this module writes, key order
included, so a journal written by the typed records is byte for byte the journal the earlier
dict records wrote, and old journals read unchanged. ``read`` is the only place that knows the
stored layout: the engine, resume, recall, inspect, export and the CLI read records through it.
A record of a kind this version does not know reads as ``Unknown`` (kept, and skipped by the
state) rather than failing a resume; an edit of an unknown op is an error, since the view
would silently differ.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from functools import partial
from typing import Any, cast

from ..errors import BadRecord as BadRecord  # kept importable from here
from ..messages import Message, plain_role
from ..store.codec import Encoded, dumps
from .record_types import AheadMark as AheadMark
from .record_types import BlockCopy as BlockCopy
from .record_types import BlockEdit as BlockEdit
from .record_types import Calibrate as Calibrate
from .record_types import Edit as Edit
from .record_types import EventRecord as EventRecord
from .record_types import InputCopy as InputCopy
from .record_types import MessageRecord as MessageRecord
from .record_types import NativeEdit as NativeEdit
from .record_types import Overhead as Overhead
from .record_types import Read as Read
from .record_types import Record as Record
from .record_types import Restart as Restart
from .record_types import Setting as Setting
from .record_types import Strip as Strip
from .record_types import SummaryEdit as SummaryEdit
from .record_types import Undo as Undo
from .record_types import Unknown as Unknown
from .record_types import Window as Window

_EVENT_FIELDS = ("stage", "before", "after", "unit", "paths", "note", "score")


def _int(raw: Mapping[str, object], key: str, where: str) -> int:
    value = raw.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadRecord(f"{where}: {key!r} should be an integer, got {value!r}")
    return value


def read(raw: Mapping[str, object], where: str = "journal record") -> Read:
    """The typed record a stored dict holds; ``BadRecord`` names what is wrong and where."""
    try:
        return _read(raw, where)
    except BadRecord:
        raise
    except (KeyError, TypeError, IndexError, AttributeError, ValueError) as error:
        raise BadRecord(f"{where} ({raw.get('kind')!r}) is malformed: {error!r}") from None


def _read(raw: Mapping[str, Any], where: str) -> Read:
    # The fields are unpacked as the journal wrote them: one of another shape raises here,
    # and ``read`` names it (``BadRecord``) instead of a check per field.
    kind = raw.get("kind")
    if kind == "message":
        return MessageRecord(_int(raw, "seq", where), raw["id"], raw["parent"], raw["message"])
    if kind == "edit":
        op = raw.get("op")
        if op in ("persist", "clear"):
            copies = tuple(
                BlockCopy(int(seq), int(bi), str(path), str(text))
                for seq, bi, path, text in raw["blocks"]
            )
            inputs = tuple(
                InputCopy(int(seq), int(bi), str(path), dict(placeholder))
                for seq, bi, path, placeholder in raw.get("inputs", ())
            )
            if inputs and op != "clear":
                raise BadRecord(f"{where}: a {op} edit replaces no tool inputs")
            return BlockEdit(op, copies, inputs)
        if op == "summarize":
            return SummaryEdit(
                start=_int(raw, "start", where),
                cut=_int(raw, "cut", where),
                pins=tuple(int(seq) for seq in raw["pins"]),
                answered={int(seq): str(t) for seq, t in raw.get("answered", {}).items()},
                folded=tuple((int(seq), str(path)) for seq, path in raw.get("folded", [])),
                folded_more=int(raw.get("folded_more", 0)),
                archive=raw["archive"],
                message=raw["message"],
                text=raw.get("text"),
                score=raw.get("score"),
                closes=bool(raw.get("closes", False)),
                carry=raw.get("carry"),
                first=raw.get("first"),
                block=raw.get("block"),
            )
        if op == "native":
            archive = raw.get("archive")
            return NativeEdit(
                cut=_int(raw, "cut", where),
                block=_int(raw, "block", where),
                start=_int(raw, "start", where),
                archive=None if archive is None else str(archive),
                index=str(raw["index"]),
                text=str(raw["text"]),
                note=str(raw["note"]),
            )
        raise BadRecord(f"{where}: unknown edit {op!r} in the session journal")
    if kind == "calibrate":
        anchor = raw.get("anchor")
        pair = (int(anchor[0]), int(anchor[1])) if anchor else None
        kinds = raw.get("kinds")
        factors = {str(k): float(v) for k, v in kinds.items()} if kinds is not None else None
        return Calibrate(float(raw["ratio"]), pair, factors)
    if kind == "overhead":
        return Overhead(_int(raw, "tokens", where))
    if kind == "window":
        return Window(_int(raw, "tokens", where), str(raw["source"]))
    if kind == "restart":
        return Restart()
    if kind == "ahead":
        start, cut = _int(raw, "start", where), _int(raw, "cut", where)
        if not 0 <= start < cut:
            raise BadRecord(f"{where}: an ahead mark needs 0 <= start < cut, got {start}, {cut}")
        return AheadMark(start, cut)
    if kind == "undo":
        target = _int(raw, "record", where)
        if target < 0:
            raise BadRecord(f"{where}: an undo names record {target}, not a journal record")
        return Undo(target)
    if kind == "strip":
        seq, block = _int(raw, "seq", where), _int(raw, "block", where)
        if seq < 0 or block < 0:
            raise BadRecord(f"{where}: a strip names block {block} of message {seq}")
        return Strip(seq, block, str(raw.get("reason", "")))
    if kind == "setting":
        name, value = raw.get("name"), raw.get("value")
        if not isinstance(name, str) or not _scalar(value):
            raise BadRecord(f"{where}: a setting needs a name and a JSON scalar value")
        return Setting(name, value, str(raw.get("source", "")))
    if kind == "event":
        extra = {k: v for k, v in raw.items() if k != "kind" and k not in _EVENT_FIELDS}
        return EventRecord(
            stage=str(raw["stage"]),
            before=int(raw.get("before", 0)),
            after=int(raw.get("after", 0)),
            unit=str(raw.get("unit", "tokens")),
            paths=tuple(str(p) for p in raw.get("paths") or ()),
            note=str(raw.get("note") or ""),
            score=raw.get("score"),
            extra=extra,
        )
    return Unknown(dict(raw))


def _scalar(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _message_json(record: MessageRecord) -> str | None:
    """The stored JSON of a message record built around its content's JSON, when that is
    ASCII (then ``ensure_ascii`` would change nothing) and the message is ``role`` and
    ``content`` alone; else None (``dumps`` encodes it)."""
    text = record.content_json
    # Read back, the keys come in the order written: only that order is built here.
    role = plain_role(record.message) if text is not None and text.isascii() else None
    if role is None:
        return None
    head = dumps({"kind": "message", "seq": record.seq, "id": record.id, "parent": record.parent})
    return f'{head[:-1]},"message":{{"role":{dumps(role)},"content":{text}}}}}'


def as_json(record: Read) -> dict[str, Any]:
    """The stored form of ``record`` (the layout ``read`` reads, in its key order)."""
    if isinstance(record, MessageRecord):
        encoded = Encoded(
            kind="message",
            seq=record.seq,
            id=record.id,
            parent=record.parent,
            message=record.message,
        )
        encoded.maker = partial(_message_json, record)
        return encoded
    if isinstance(record, BlockEdit):
        edit: dict[str, Any] = {
            "kind": "edit",
            "op": record.op,
            "blocks": [[b.seq, b.block, b.path, b.text] for b in record.blocks],
        }
        if record.inputs:
            edit["inputs"] = [[i.seq, i.block, i.path, i.input] for i in record.inputs]
        return edit
    if isinstance(record, SummaryEdit):
        out: dict[str, Any] = {
            "kind": "edit",
            "op": "summarize",
            "start": record.start,
            "cut": record.cut,
            "pins": list(record.pins),
            "answered": {str(seq): t for seq, t in record.answered.items()},
            "folded": [list(item) for item in record.folded],
            "folded_more": record.folded_more,
            "archive": record.archive,
            "message": record.message,
            "text": record.text,
            "score": record.score,
        }
        if record.closes:
            out["closes"] = True
        if record.carry is not None:
            out["carry"] = record.carry
        if record.first is not None:
            out["first"] = record.first
        if record.block is not None:
            out["block"] = record.block
        return out
    if isinstance(record, NativeEdit):
        return {
            "kind": "edit",
            "op": "native",
            "cut": record.cut,
            "block": record.block,
            "start": record.start,
            "archive": record.archive,
            "index": record.index,
            "text": record.text,
            "note": record.note,
        }
    if isinstance(record, Calibrate):
        anchor = list(record.anchor) if record.anchor is not None else None
        written: dict[str, Any] = {"kind": "calibrate", "ratio": record.ratio, "anchor": anchor}
        if record.kinds is not None:
            written["kinds"] = dict(record.kinds)
        return written
    if isinstance(record, Overhead):
        return {"kind": "overhead", "tokens": record.tokens}
    if isinstance(record, Window):
        return {"kind": "window", "tokens": record.tokens, "source": record.source}
    if isinstance(record, Restart):
        return {"kind": "restart"}
    if isinstance(record, AheadMark):
        return {"kind": "ahead", "start": record.start, "cut": record.cut}
    if isinstance(record, Undo):
        return {"kind": "undo", "record": record.record}
    if isinstance(record, Strip):
        return {"kind": "strip", "seq": record.seq, "block": record.block, "reason": record.reason}
    if isinstance(record, Setting):
        return {
            "kind": "setting",
            "name": record.name,
            "value": record.value,
            "source": record.source,
        }
    if isinstance(record, EventRecord):
        return {
            "kind": "event",
            "stage": record.stage,
            "before": record.before,
            "after": record.after,
            "unit": record.unit,
            "paths": list(record.paths),
            "note": record.note,
            "score": record.score,
            **record.extra,
        }
    return dict(record.raw)


def journal(raw: Iterable[Mapping[str, object]], where: str = "session") -> Iterator[Read]:
    """Every record of a stored journal, typed, in order."""
    for offset, item in enumerate(raw):
        yield read(item, f"{where}, record {offset}")


def found_messages(raw: Iterable[Mapping[str, object]]) -> Iterator[tuple[int, Message]]:
    """The (position, message) of each record a store's ``search`` returned: an index may
    return only those two fields of a message record."""
    for offset, item in enumerate(raw):
        seq, message = item.get("seq"), item.get("message")
        if (
            item.get("kind") != "message"
            or not isinstance(seq, int)
            or not isinstance(message, dict)
        ):
            raise BadRecord(f"search hit {offset} is not a message record: {dict(item)!r:.200}")
        yield seq, cast(Message, message)  # JSON from the store, as the journal wrote it


def logged_messages(raw: Iterable[Mapping[str, object]]) -> Iterator[MessageRecord]:
    """The message records of a stored journal, in order."""
    for record in journal(raw):
        if isinstance(record, MessageRecord):
            yield record


__all__ = [
    "AheadMark",
    "BadRecord",
    "BlockCopy",
    "BlockEdit",
    "Calibrate",
    "Edit",
    "EventRecord",
    "InputCopy",
    "MessageRecord",
    "NativeEdit",
    "Overhead",
    "Read",
    "Record",
    "Restart",
    "Setting",
    "Strip",
    "SummaryEdit",
    "Undo",
    "Unknown",
    "Window",
    "as_json",
    "found_messages",
    "journal",
    "logged_messages",
    "read",
]
