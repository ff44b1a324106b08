"""What compaction did to a session, turn by turn (the CLI's ``inspect``).

The session's journal is replayed through ``SessionState`` (the replay a resume does), one
record at a time, so every figure is what the live engine had:

* **view tokens per turn**: when an assistant message is logged, the view as it stood then
  is the request that produced it; its size (``SessionState.measure``: the API's last count
  plus an estimate of what came after, the system prompt and tools included) is the turn's;
* **events**: each compaction the journal recorded, at the turn of the request it shaped
  (the one after the last answer), with its size before and after, the tokens it saved,
  and where the full copy went (paths relative to the store's root);
* **now**: the size of the view the session's next request would carry;
* **ledger**: what the agent did (files changed and read, commands, the last test run, open
  errors), as the session's ledger holds it after the last record (``session/ledger.py``);
* **thinking** (``Thinking``): on a model that binds its thinking to its prefix, the thinking
  blocks the replies brought, those a compaction (or the API) took out of the view, and of
  the blocks one reply brought, the share the next request still sent.

A summary's event says when its summary was asked for, when the answer came in and how long
the call waited for it (``timing_line``), made ahead of need or at the trigger. A compaction
taken back (``Undo``) stays in the timeline, marked ``undone`` (``Undone``): its event is the
one journaled right after its edit.

``render_chart`` draws the view tokens per turn as plain text (block characters, no markup:
it reads the same in a terminal and in a pipe) in a given width, 80 columns by default,
turns bucketed by their maximum when there are more turns than columns; a ``^`` under a
column marks a compaction, a row of ``-`` the policy's context limit.
"""

from __future__ import annotations

import math
import textwrap
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..keys import content_key
from ..messages import Message, blocks
from ..session import ledger_view
from ..session.ledger_rules import stored_rules
from ..session.policy import assumed_window
from ..session.records import (
    BlockEdit,
    EventRecord,
    MessageRecord,
    Read,
    Strip,
    SummaryEdit,
    Undo,
    journal,
)
from ..session.state import SessionState
from ..session.thinking import is_thinking
from ..sizing import TokenCounter
from ..store.base import Store
from ..store.meta import meta_of


@dataclass(frozen=True)
class Event:
    """One pass at one turn: view tokens before and after, and where the copies went."""

    turn: int
    stage: str
    before: int
    after: int
    saved: int
    note: str
    paths: list[str]
    timing: dict[str, Any] | None = None
    """A summary's: ``ahead``, ``started`` and ``ready`` (wall clock), ``waited`` (seconds)."""
    undone: bool = False


class Undone:
    """Which events report a compaction an ``Undo`` took back: fed the journal's records in
    order (``see``), it marks them (``mark``)."""

    def __init__(self) -> None:
        self._edit: int | None = None  # position of the edit whose event comes next
        self._edits: dict[int, int] = {}  # event index -> position of its edit
        self._undone: set[int] = set()

    def see(self, at: int, record: Read, events: int) -> None:
        """Record ``record`` at journal position ``at``, ``events`` events before it."""
        if isinstance(record, SummaryEdit) or (
            isinstance(record, BlockEdit) and record.op == "clear"
        ):
            self._edit = at
        elif isinstance(record, EventRecord):
            if self._edit is not None:
                self._edits[events] = self._edit
            self._edit = None
        elif isinstance(record, Undo):
            self._undone.add(record.record)

    def mark(self, events: list[Event]) -> list[Event]:
        return [
            replace(e, undone=True) if self._edits.get(i, -1) in self._undone else e
            for i, e in enumerate(events)
        ]


def timing_of(record: EventRecord) -> dict[str, Any] | None:
    timing = record.extra.get("timing")
    return timing if isinstance(timing, dict) else None


def timing_line(timing: dict[str, Any] | None) -> str | None:
    """When a summary was asked for, when it was ready and how long the call waited, as one
    line; None for an event without timing."""
    if not timing or not isinstance(timing.get("started"), (int, float)):
        return None
    started = float(timing["started"])
    when = time.strftime("%H:%M:%S", time.gmtime(started)) + " UTC"
    how = "asked for ahead" if timing.get("ahead") else "asked for at the trigger"
    ready = timing.get("ready")
    came = (
        f"ready {float(ready) - started:.2f} s later"
        if isinstance(ready, (int, float))
        else "never ready"
    )
    waited = timing.get("waited")
    wait = f"the agent waited {float(waited):.2f} s" if isinstance(waited, (int, float)) else ""
    return ", ".join(x for x in (f"summary {how} at {when}", came, wait, call_cost(timing)) if x)


def call_cost(timing: dict[str, Any]) -> str:
    """The summary call's tokens as the API reported them, or "" when it reported none."""
    sent, out = timing.get("input_tokens"), timing.get("output_tokens")
    if not isinstance(sent, int) or not isinstance(out, int):
        return ""
    cached = timing.get("cached_tokens")
    read = f" ({cached:,} from the cache)" if isinstance(cached, int) and cached else ""
    return f"its call read {sent:,} tokens{read} and wrote {out:,}"


@dataclass
class Thinking:
    """The thinking blocks of a session's replies, and how many compaction took back."""

    produced: int = 0
    stripped: int = 0
    strips: int = 0
    followed: int = 0  # replies with thinking that a request came after
    kept: int = 0  # of those, the replies whose thinking that next request still sent
    _last: tuple[int, int] | None = None  # the newest reply's (position, blocks)

    def reply(self, seq: int, message: Message) -> None:
        count = sum(1 for b in blocks(message) if is_thinking(b))
        if self._last is not None:
            self.followed += 1
            self.kept += 1
        self._last = (seq, count) if count else None
        self.produced += count

    def strip(self, record: Strip, removed: int) -> None:
        self.strips += 1
        self.stripped += removed
        last = self._last
        if last is not None and record.seq <= last[0]:
            # The newest reply's thinking leaves before the next request: not kept.
            self.followed += 1
            self._last = None

    @property
    def kept_share(self) -> float | None:
        return self.kept / self.followed if self.followed else None


@dataclass
class Timeline:
    session: str
    limit: int | None
    messages: int = 0
    view_tokens: list[int] = field(default_factory=list)  # index i: turn i + 1
    events: list[Event] = field(default_factory=list)
    now: int = 0
    window: int | None = None
    """The context window the server stated (a refusal, its own report), when it did."""
    assumed: str | None = None
    """The model whose window the limit was assumed for (no table knows it, no
    ``context_limit`` was given, and the server stated none), else None."""
    thinking: Thinking = field(default_factory=Thinking)
    ledger: dict[str, Any] = field(default_factory=dict)
    """What the agent did, as the session's ledger kept it (``ledger_view.as_dict``)."""
    ledger_lines: list[str] = field(default_factory=list)
    """The same, as ``inspect`` prints it (``ledger_view.full``)."""

    @property
    def turns(self) -> int:
        return len(self.view_tokens)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        del data["ledger_lines"]
        data["turns"] = self.turns
        data["thinking"] = {
            "produced": self.thinking.produced,
            "stripped": self.thinking.stripped,
            "strips": self.thinking.strips,
            "kept_share": self.thinking.kept_share,
        }
        return data


def timeline(store: Store, session: str, root: str | None = None) -> Timeline:
    """Replay ``session``'s journal (see the module docstring)."""
    meta = meta_of(store, session)
    out = Timeline(session, meta.context_limit if meta is not None else None)
    state = SessionState(TokenCounter(), stored_rules(meta.policy if meta is not None else None))
    base = Path(root or store.root)
    undone = Undone()
    for at, record in enumerate(journal(store.records(session), f"session {session}")):
        undone.see(at, record, len(out.events))
        if isinstance(record, MessageRecord):
            message = record.message
            if message.get("role") == "assistant":
                out.view_tokens.append(state.measure())
                out.thinking.reply(record.seq, message)
            state.add_message(record, content_key(message))
            out.messages += 1
        elif isinstance(record, EventRecord):
            before, after = record.before, record.after
            out.events.append(
                Event(
                    out.turns + 1,
                    record.stage,
                    before,
                    after,
                    before - after,
                    record.note,
                    [shown_path(p, base) for p in record.paths],
                    timing_of(record),
                )
            )
        elif isinstance(record, Strip):
            before = _thinking_in_view(state)
            state.apply(record)
            out.thinking.strip(record, before - _thinking_in_view(state))
        else:
            state.apply(record)
    out.events = undone.mark(out.events)
    out.now = state.measure()
    if state.window is not None:
        # The window the server stated caps the limit the session sized against.
        out.window = state.window.tokens
        out.limit = min(out.limit, out.window) if out.limit else out.window
    elif meta is not None and meta.policy is not None:
        policy = meta.policy
        model = policy.get("model")
        if assumed_window(model, policy.get("context_limit"), policy.get("reserve_tokens")):
            out.assumed = str(model)
    out.ledger = ledger_view.as_dict(state.ledger)
    out.ledger_lines = ledger_view.full(state.ledger).splitlines()
    return out


def _thinking_in_view(state: SessionState) -> int:
    return sum(1 for m in state.view for b in blocks(m) if is_thinking(b))


def shown_path(path: str, root: Path) -> str:
    """``path`` relative to ``root`` when it is under it, as given otherwise."""
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return path


def render_chart(
    values: list[int],
    width: int = 80,
    height: int = 10,
    limit: int | None = None,
    marks: set[int] | None = None,
) -> list[str]:
    """View tokens per turn as text lines no wider than ``width`` (see the module docstring).

    ``marks`` are 1-based turns to flag under the axis.
    """
    if not values:
        return ["(no turns yet)"]
    peak = max(max(values), 1)
    # A limit far above the peak would flatten every column to the floor: chart the peak and
    # name the limit under the chart instead.
    above = limit is not None and limit > 2 * peak
    top = peak if above or limit is None else max(peak, limit)
    label = len(f"{top:,}")
    plot = max(10, width - label - 2)
    per = math.ceil(len(values) / plot)
    columns = [max(values[i : i + per]) for i in range(0, len(values), per)]
    flagged = {(t - 1) // per for t in marks or set() if 1 <= t <= len(values)}
    # Few turns: each takes several columns, so a short session still reads as a chart.
    wide = max(1, min(4, plot // len(columns)))
    columns = [v for v in columns for _ in range(wide)]
    flagged = {i * wide for i in flagged}
    limit_row = None if limit is None or above else round(limit / top * height)
    lines = []
    for row in range(height, 0, -1):
        full, half = top * row / height, top * (row - 0.5) / height
        cells = "".join("█" if v >= full else "▄" if v >= half else " " for v in columns)
        if row == limit_row:
            cells = "".join("-" if c == " " else c for c in cells)
        tag = f"{top:,}" if row == height else ("0" if row == 1 else "")
        if row == limit_row and row not in (height, 1):
            tag = f"{limit:,}"
        lines.append(f"{tag:>{label}} │{cells}")
    lines.append(f"{'':>{label}} └{'─' * len(columns)}")
    if flagged:
        ticks = "".join("^" if i in flagged else " " for i in range(len(columns)))
        lines.append(f"{'':>{label}}  {ticks.rstrip()}")
    first, last = "turn 1", f"turn {len(values)}"
    gap = max(1, len(columns) - len(first) - len(last))
    lines.append(f"{'':>{label}}  {first}{' ' * gap}{last}")
    if per > 1:
        lines.append(f"{'':>{label}}  (one column = {per} turns, their largest view)")
    if above:
        share = f"{peak / limit:.0%}" if limit else ""
        lines.append(
            f"{'':>{label}}  (limit {limit:,} is above the chart; the peak is {share} of it)"
        )
    return lines


def fill(text: str, width: int, indent: str = "", first: str | None = None) -> str:
    """``text`` wrapped at word boundaries in ``width`` columns (a word longer than a line,
    a path say, stays whole on its own line)."""
    return textwrap.fill(
        text,
        width=width,
        initial_indent=indent if first is None else first,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def after_last(turns: int, marked: list[int]) -> str | None:
    """The line that says what a pass numbered past the last turn is, when there is one:
    turn N is the request before the model's N-th answer, so turn ``turns + 1`` is the
    request after the last answer (where the history ends)."""
    if not marked or max(marked) <= turns:
        return None
    return (
        f"(turn N: the request before the model's N-th answer; turn {turns + 1}: the request "
        "after its last one)"
    )


def pass_lines(
    turn: int,
    stage: str,
    before: int,
    after: int,
    note: str,
    paths: list[str],
    width: int = 80,
    timing: dict[str, Any] | None = None,
    undone: bool = False,
) -> list[str]:
    """One compaction as text in ``width`` columns: the numbers on one line, what it did and
    where the full copy went on the next ones (a path is never shortened: it is what the
    model reads back); a summary's timing (``timing_line``), and ``(undone)`` after the
    stage of a compaction taken back."""
    saved = f"(-{before - after:,})"
    stage = f"{stage} (undone)" if undone else stage
    numbers = f"  turn {turn:>4}  {stage:<20} {before:>8,} -> {after:>8,} {saved}"
    if len(numbers) > width:  # narrow: the columns give way, then the line wraps
        numbers = f"  turn {turn}  {stage} {before:,} -> {after:,} {saved}"
    lines = fill(numbers, width, "      ", "").splitlines()
    if note:
        lines += fill(note, width, "      ").splitlines()
    said = timing_line(timing)
    if said:
        lines += fill(said, width, "      ").splitlines()
    if paths:
        more = f"(+{len(paths) - 1} more)" if len(paths) > 1 else ""
        lines += fill(f"{paths[0]} {more}".rstrip(), width, "          ", "    copy: ").splitlines()
    return lines


__all__ = [
    "Event",
    "Timeline",
    "Undone",
    "after_last",
    "fill",
    "pass_lines",
    "render_chart",
    "shown_path",
    "timeline",
    "timing_line",
    "timing_of",
]
