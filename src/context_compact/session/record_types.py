"""The journal's records as frozen dataclasses, one per kind, and the unions of them.

Only the types: how a record is read from and written to its stored layout is ``records``
(``read`` and ``as_json``), the one place that knows that layout.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..messages import Block, Message


@dataclass(frozen=True)
class MessageRecord:
    seq: int
    id: str
    parent: str
    message: Message
    kind: Literal["message"] = field(default="message", init=False)
    # ``to_json`` of the message's content as its count made it (``Shown.texts``), or None:
    # ``as_json`` then need not encode the message again. Not part of the record's value.
    content_json: str | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class BlockCopy:
    """Block ``block`` of message ``seq`` now shows ``text``; ``path`` holds its full text."""

    seq: int
    block: int
    path: str
    text: str


@dataclass(frozen=True)
class InputCopy:
    """The ``tool_use`` block ``block`` of message ``seq`` now has ``input`` (a placeholder
    naming its line of ``path``, which holds the original input)."""

    seq: int
    block: int
    path: str
    input: dict[str, Any]


@dataclass(frozen=True)
class BlockEdit:
    op: Literal["persist", "clear"]
    blocks: tuple[BlockCopy, ...]
    inputs: tuple[InputCopy, ...] = ()
    kind: Literal["edit"] = field(default="edit", init=False)

    @property
    def paths(self) -> tuple[str, ...]:
        """The files named, each once, in order."""
        named = [*(b.path for b in self.blocks), *(i.path for i in self.inputs)]
        return tuple(dict.fromkeys(named))


@dataclass(frozen=True)
class SummaryEdit:
    start: int
    cut: int
    pins: tuple[int, ...]
    answered: dict[int, str]
    folded: tuple[tuple[int, str], ...]
    folded_more: int
    archive: str
    message: Message
    text: str | None
    score: dict[str, float | None] | None
    closes: bool = False
    carry: Message | None = None
    first: Message | None = None
    """The first request as shown from now on, when its images were saved as files."""
    block: Block | None = None
    """The provider's compaction block standing for messages before ``cut`` (a compaction
    request of ours: ``native_tier.py``); ``text`` is then our readable summary of them."""
    op: Literal["summarize"] = field(default="summarize", init=False)
    kind: Literal["edit"] = field(default="edit", init=False)


@dataclass(frozen=True)
class NativeEdit:
    cut: int
    block: int
    start: int
    archive: str | None
    """The archive of what the view showed before the block (None: nothing was before it)."""
    index: str
    text: str
    """A readable summary of ours (extractive) of what the block replaced."""
    note: str
    """What the view says after the block: where the replaced messages are."""
    op: Literal["native"] = field(default="native", init=False)
    kind: Literal["edit"] = field(default="edit", init=False)


@dataclass(frozen=True)
class Calibrate:
    ratio: float
    anchor: tuple[int, int] | None
    # The estimate's factors per kind of text (``sizing.calibrate``), when they were learned.
    kinds: dict[str, float] | None = None
    kind: Literal["calibrate"] = field(default="calibrate", init=False)


@dataclass(frozen=True)
class Overhead:
    tokens: int
    kind: Literal["overhead"] = field(default="overhead", init=False)


@dataclass(frozen=True)
class Window:
    tokens: int
    source: str
    kind: Literal["window"] = field(default="window", init=False)


@dataclass(frozen=True)
class Restart:
    kind: Literal["restart"] = field(default="restart", init=False)


@dataclass(frozen=True)
class AheadMark:
    """Messages ``start .. cut-1``: the range the next summary replaces (``ahead.py``)."""

    start: int
    cut: int
    kind: Literal["ahead"] = field(default="ahead", init=False)


@dataclass(frozen=True)
class Undo:
    """The compaction edit at journal record ``record`` (0-based) is undone."""

    record: int
    kind: Literal["undo"] = field(default="undo", init=False)


@dataclass(frozen=True)
class Strip:
    """Every ``thinking`` and ``redacted_thinking`` block logged before this record, at or
    after block ``block`` of message ``seq``, leaves the view for good (``thinking.py``): a
    change before them broke the binding to their prefix (``reason``: ``compaction``, the
    API's ``refusal``, the API's ``dropped`` list, an ``undo``). Blocks logged after the
    record are not touched: they were made on the view without the stripped ones."""

    seq: int
    block: int
    reason: str
    kind: Literal["strip"] = field(default="strip", init=False)


@dataclass(frozen=True)
class Setting:
    """A per-session decision, journaled so a resume keeps it: ``name`` is one of
    ``SETTINGS`` and ``value`` a JSON scalar; the newest record of a name wins."""

    name: str
    value: str | int | float | bool | None
    source: str = ""
    kind: Literal["setting"] = field(default="setting", init=False)


@dataclass(frozen=True)
class EventRecord:
    stage: str
    before: int
    after: int
    unit: str
    paths: tuple[str, ...]
    note: str
    score: dict[str, float | None] | None
    extra: dict[str, Any] = field(default_factory=dict)
    kind: Literal["event"] = field(default="event", init=False)


@dataclass(frozen=True)
class Unknown:
    """A record of a kind this version does not know: kept as stored, applied as nothing."""

    raw: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.raw.get("kind"))


Edit = BlockEdit | SummaryEdit
Record = (
    MessageRecord
    | BlockEdit
    | SummaryEdit
    | NativeEdit
    | Calibrate
    | Overhead
    | Window
    | Restart
    | AheadMark
    | Undo
    | Strip
    | Setting
    | EventRecord
)
Read = Record | Unknown
