"""The session's state: the log tail, the edits applied to it, and the view derived from both.

    view = prefix + [render(seq) for seq in first_kept .. n-1]
    render(seq) = the logged message with its replaced blocks (persisted or cleared results)

A provider's own compaction block (``NativeEdit``, ``native.py``) moves the start of the view
to the message holding it, from the block on: it takes the first request's place (kept first,
unchanged, by every summary of ours; once one follows, the block alone, since the rest of its
message went into that summary), and the first user message after it carries the note naming
where the replaced messages are.

The state is made of parts with one job each: the log tail and its positions (here), the turn
in progress (``turn.Turn``), the prefix the summaries made (``pinned.Pinned``), the blocks
shown instead of the logged ones (``Replaced``, here), the view as sent with its keys and
counts (``shown.Shown``), the calibration of the estimate (``ratio``, ``anchor``,
``overhead``), and the ledger of what the agent did (``ledger.Ledger``: fed every message as
it is logged, a function of the messages alone, so no record of its own).

Everything that changes the view is a journal record (``records.py``) applied by ``apply``:
a message, an edit (persist, clear, summarize), a calibration, the overhead, a restart. The
live engine and a resumed one apply the same records through the same function, so a session
reopened from its journal sends the same view, byte for byte.

Memory is O(view): messages before ``first_kept`` leave memory when a summary covers them
(the store has them), except the pinned first and latest requests.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any, cast

from ..keys import ROOT
from ..messages import (
    Block,
    Message,
    block_at,
    block_type,
    blocks,
    clone,
    compaction_at,
    is_request,
    is_tool_use,
    opens_with_thinking,
    result_at,
    use_at,
)
from ..sizing import TokenCounter
from .ledger import Ledger
from .ledger_rules import LedgerRules
from .notes import Notes
from .pinned import Pinned, answer_message
from .records import (
    AheadMark,
    BlockEdit,
    Calibrate,
    MessageRecord,
    NativeEdit,
    Overhead,
    Read,
    Restart,
    Setting,
    Strip,
    SummaryEdit,
    Undo,
    Window,
)
from .shown import Shown
from .thinking import SETTING, thinking_after, without_thinking
from .turn import Turn

Pos = tuple[int, int]


class Replaced:
    """Blocks shown instead of the logged ones: by position, the block in view, the file
    holding the full text, which of them a clearing (not a persist) replaced, and the
    ``tool_use`` blocks whose input a clearing replaced (``clear_tool_inputs``)."""

    def __init__(self) -> None:
        self.blocks: dict[Pos, Block] = {}
        self.copies: dict[Pos, str] = {}
        self.cleared: set[Pos] = set()
        self.cleared_inputs: set[Pos] = set()

    def take(self, edit: BlockEdit, logged: dict[int, Message]) -> set[int]:
        """Apply ``edit``; the positions of the messages it touched."""
        touched = set()
        for copy_ in edit.blocks:
            pos = (copy_.seq, copy_.block)
            result = result_at(logged[copy_.seq], copy_.block)
            self.blocks[pos] = {**result, "content": copy_.text}
            self.copies[pos] = copy_.path
            if edit.op == "clear":
                self.cleared.add(pos)
            touched.add(copy_.seq)
        for use in edit.inputs:
            pos = (use.seq, use.block)
            call = use_at(logged[use.seq], use.block)
            self.blocks[pos] = {**call, "input": use.input}
            self.cleared_inputs.add(pos)
            touched.add(use.seq)
        return touched

    def forget_before(self, cut: int, keep: set[int]) -> None:
        self.blocks = {p: b for p, b in self.blocks.items() if p[0] >= cut or p[0] in keep}
        self.copies = {p: c for p, c in self.copies.items() if p[0] >= cut or p[0] in keep}
        self.cleared = {p for p in self.cleared if p[0] >= cut}
        self.cleared_inputs = {p for p in self.cleared_inputs if p[0] >= cut}


class SessionState:
    def __init__(self, counter: TokenCounter, ledger: LedgerRules | None = None) -> None:
        self.counter = counter
        self.ledger_rules = ledger or LedgerRules()
        self.n = 0
        self.overhead = 0
        self.ratio = 1.0
        # The window the server stated (``Window``): it outlives a restart, as the server does.
        self.window: Window | None = None
        # Per-session decisions (``Setting``): they outlive a restart, as the model does.
        self.settings: dict[str, str | int | float | bool | None] = {}
        self.reset()

    def reset(self) -> None:
        """A new conversation: the log goes on (positions keep counting), the view restarts."""
        self.base = self.n
        self.head = ROOT
        self.msgs: dict[int, Message] = {}
        self.first_kept = self.n
        self.first_request: int | None = None
        self.latest_request: int | None = None
        self.turn = Turn()
        self.replaced = Replaced()
        self.pinned = Pinned()
        # Tokens of each result's readable text, by position, with the text they were counted
        # on (``passes.persist`` sizes each new result, ``clearing.clear`` any it finds unsized).
        self.result_sizes: dict[Pos, tuple[str, int]] = {}
        # Where the logged assistant messages and the users' tool_result blocks are, from
        # ``first_kept`` on (kept as messages arrive: a clearing need not scan the view).
        self._answers: list[int] = []
        self._results: list[Pos] = []
        self.shown = Shown(self.counter)
        # Every tool_use id of the conversation, also those a summary took out of the view: a
        # caller that passes its full history must not reuse one (check() of that history).
        # Built from that history the first time one is passed (``log_ids``), then kept as
        # messages are logged; None until then, so memory and checkpoints stay O(view).
        self.log_use_ids: set[str] | None = None
        # (messages of the view the API measured, its real count); None once that prefix changed.
        self.anchor: tuple[int, int] | None = None
        # The newest native compaction block logged (position, block index), and the one the
        # view starts at, with the position of the user message that carries its note.
        self.native_seen: Pos | None = None
        self.native: NativeEdit | None = None
        self.native_note_at: int | None = None
        # The API has counted a request of this session (a usage, or a refusal's figures).
        self.calibrated = False
        # The range the next summary replaces, fixed at the soft mark (``ahead.py``).
        self.ahead: tuple[int, int] | None = None
        # Thinking blocks out of the view for good (``Strip``): from (seq, block) on, in the
        # messages logged before ``upto`` (``thinking.py``).
        self.stripped: list[tuple[int, int, int]] = []
        # What the agent did, from the tool calls and results logged (``ledger.py``).
        self.ledger = Ledger(self.ledger_rules)
        # What the agent wrote with the notes tool, from the calls logged (``notes.py``).
        self.notes = Notes()

    # -- reading -----------------------------------------------------------------------
    @property
    def view(self) -> list[Message]:
        return self.shown.messages

    @property
    def prefix(self) -> list[Message]:
        return self.pinned.prefix

    def conversation_len(self) -> int:
        return self.n - self.base

    @property
    def preserved(self) -> bool:
        """Whether the model checks each thinking block's prefix (``thinking.py``)."""
        return self.settings.get(SETTING) is True

    def stripped_from(self, seq: int) -> int | None:
        """The first block index of message ``seq`` from which its thinking is out of the
        view (``Strip``), or None."""
        found: int | None = None
        for lo, block, upto in self.stripped:
            if lo <= seq < upto:
                at = block if seq == lo else 0
                found = at if found is None else min(found, at)
        return found

    def wall(self) -> int | None:
        """The position of the turn in progress's first assistant message while the view
        opens that turn with a thinking block the model checks: nothing before it may
        change (the API wants that block kept, and a change before it would void it)."""
        first = self.turn.first
        if not self.preserved or first is None or not self.turn.thinks:
            return None
        if first < self.first_kept:
            return None
        return first if opens_with_thinking(self.view[self.view_index(first)]) else None

    def render(self, seq: int) -> Message:
        message = self.msgs[seq]
        content = message.get("content")
        repl = self.replaced.blocks
        native = self.native
        strip = self.stripped_from(seq) if self.stripped else None
        if strip is not None and not thinking_after(message, strip):
            strip = None
        if (
            (
                not isinstance(content, list)
                or not any((seq, bi) in repl for bi in range(len(content)))
            )
            and (native is None or seq not in (native.cut, self.native_note_at))
            and strip is None
        ):
            rendered: Message = clone(message)
            return rendered
        out = cast(Message, clone({k: v for k, v in message.items() if k != "content"}))
        if isinstance(content, list):
            shown = [clone(repl.get((seq, bi), block)) for bi, block in enumerate(content)]
            if strip is not None:
                shown = without_thinking(shown, strip)
        else:
            shown = [{"type": "text", "text": content}]
        if native is not None and seq == native.cut:
            shown = shown[native.block :]
        if native is not None and seq == self.native_note_at:
            shown.append({"type": "text", "text": native.note})
        out["content"] = shown
        return out

    def view_index(self, seq: int) -> int:
        return len(self.pinned.prefix) + seq - self.first_kept

    def estimate(self) -> int:
        return self.shown.total + self.overhead

    def measure(self) -> int:
        """Tokens of the request as it would be sent: the API's last count of the view's head
        plus an estimate of what was appended since, or the whole estimate; either estimate
        scaled by the last observed real/estimated ratio."""
        if self.anchor is not None:
            length, real = self.anchor
            if length <= len(self.shown):
                return real + round(sum(self.shown.tokens[length:]) * self.ratio)
        return round(self.estimate() * self.ratio)

    def log_ids(self, logged: list[Message]) -> set[str]:
        """The tool_use ids of the conversation's log; ``logged`` is that log as the caller
        passed it (its chain id is ``head``), read only the first time they are asked for."""
        if self.log_use_ids is None:
            self.log_use_ids = {b["id"] for m in logged for b in blocks(m) if is_tool_use(b)}
        return self.log_use_ids

    def last_assistant(self) -> int:
        answers = self._answers
        return answers[-1] if answers and answers[-1] >= self.first_kept else self.first_kept - 1

    def legal_cut(self, seq: int) -> bool:
        return self.turn.legal_cut(seq, self.msgs[seq])

    def turn_starts(self) -> list[int]:
        """The positions of the assistant messages in view, in order."""
        return self._answers[bisect_left(self._answers, self.first_kept) :]

    def results(self, start: int, stop: int) -> list[tuple[Pos, Block]]:
        """The tool_result blocks of user messages logged from ``start`` (at least
        ``first_kept``) to ``stop``, by position, in order."""
        at = self._results
        lo = bisect_left(at, (max(start, self.first_kept), -1))
        hi = bisect_left(at, (stop, -1), lo)
        # Untyped on purpose: indexed inline, no call per result (``block_at`` says why the
        # content at a recorded position is a list).
        msgs: dict[int, Any] = self.msgs
        return [((seq, bi), msgs[seq]["content"][bi]) for seq, bi in at[lo:hi]]

    # -- changing ----------------------------------------------------------------------
    def _set_view(self, index: int, message: Message) -> None:
        self.shown.set(index, message)
        if self.anchor is not None and index < self.anchor[0]:
            self.anchor = None

    def add_message(self, record: MessageRecord, key: str) -> None:
        seq, message = record.seq, record.message
        if seq != self.n:
            raise ValueError(f"journal out of order: message {seq} where {self.n} was expected")
        self.msgs[seq] = message
        self.n += 1
        self.head = record.id
        if is_request(message):
            if seq == self.base:
                self.first_request = seq
            self.latest_request = seq
        self.turn.logged(seq, message)
        self.ledger.add(seq, message)
        self.notes.add(seq, message)
        role = message.get("role")
        if role == "assistant":
            self._answers.append(seq)
        elif role == "user":
            self._results += [
                (seq, bi) for bi, b in enumerate(blocks(message)) if block_type(b) == "tool_result"
            ]
        ids = [b["id"] for b in blocks(message) if is_tool_use(b)]
        self.shown.use_ids.update(ids)
        if self.log_use_ids is not None:
            self.log_use_ids.update(ids)
        at = compaction_at(message)
        if at is not None:
            self.native_seen = (seq, at)
        native = self.native
        if native is not None and native.note and self.native_note_at is None and role == "user":
            self.native_note_at = seq
            self.shown.push(self.render(seq))
            return
        self.shown.push(message, key, shared=True)

    def learn_kinds(self, length: int, real: int) -> dict[str, float] | None:
        """Teach the counter's factors per kind of text what the API counted for the messages
        sent since the last usage (``view[anchor:length]``); the factors to journal, or None."""
        anchor = self.anchor
        if anchor is None or not anchor[0] < length or real <= anchor[1]:
            return None
        self.counter.observe(real - anchor[1], self.view[anchor[0] : length])
        return dict(self.counter.calibration.factors) if self.counter.calibrates else None

    def apply(self, record: Read) -> None:
        """Apply one record that is not a message (events and unknown kinds change nothing)."""
        if isinstance(record, BlockEdit):
            for seq in sorted(self.replaced.take(record, self.msgs)):
                self._set_view(self.view_index(seq), self.render(seq))
            if record.op == "clear":
                # A range fixed ahead was fixed for the compaction that clears: whether a
                # summary of it follows is that call's decision (``ahead.py``); the next one
                # is fixed afresh.
                self.ahead = None
        elif isinstance(record, SummaryEdit):
            self._summarized(record)
        elif isinstance(record, NativeEdit):
            self._native(record)
        elif isinstance(record, Calibrate):
            self.calibrated = True
            self.ratio = record.ratio
            self.anchor = record.anchor
            if record.kinds is not None:
                self.counter.set_factors(record.kinds)
        elif isinstance(record, Overhead):
            self.overhead = record.tokens
        elif isinstance(record, Window):
            self.window = record
        elif isinstance(record, Restart):
            self.reset()
        elif isinstance(record, AheadMark):
            self.ahead = (record.start, record.cut)
        elif isinstance(record, Strip):
            self._strip(record)
        elif isinstance(record, Setting):
            self.settings[record.name] = record.value
        elif isinstance(record, Undo):
            # The view was rebuilt without the undone edit (``undo.py``): the API's count of
            # its head and a range fixed on the view it replaced no longer hold.
            self.anchor = None
            self.ahead = None

    def _strip(self, record: Strip) -> None:
        """Thinking blocks logged so far, from ``record``'s block on, leave the view."""
        self.stripped.append((record.seq, record.block, self.n))
        for seq in range(max(record.seq, self.first_kept), self.n):
            message = self.msgs.get(seq)
            start = record.block if seq == record.seq else 0
            if message is not None and thinking_after(message, start):
                self._set_view(self.view_index(seq), self.render(seq))

    def _summarized(self, edit: SummaryEdit) -> None:
        cut = edit.cut
        # What the view shows of the log from ``cut`` on stays as it is: only the part before
        # it (the old prefix and the summarized messages) gives way to the new prefix.
        drop = len(self.pinned.prefix) + cut - self.first_kept
        self.pinned.apply(edit, lambda seq: seq in self.msgs, self.render, self.first_request)
        keep = set(self.pinned.pins)
        for seq in [s for s in self.msgs if s < cut and s not in keep]:
            del self.msgs[seq]
        self.replaced.forget_before(cut, keep)
        sizes = self.result_sizes
        self.result_sizes = {p: v for p, v in sizes.items() if p[0] >= cut or p[0] in keep}
        del self._answers[: bisect_left(self._answers, cut)]
        del self._results[: bisect_left(self._results, (cut, -1))]
        self.first_kept = cut
        if edit.closes:
            self.turn.close()
        self.shown.reprefix(self.pinned.prefix, drop)
        self.stripped = [s for s in self.stripped if s[2] > cut]
        self.anchor = None
        self.ahead = None

    def _native(self, edit: NativeEdit) -> None:
        """The view starts at the provider's compaction block: everything before it leaves
        (the store has it), the block's message becomes the head every summary keeps."""
        cut = edit.cut
        self.native = edit
        after = [seq for seq in range(cut + 1, self.n) if self.msgs[seq].get("role") == "user"]
        self.native_note_at = after[0] if after and edit.note else None
        for seq in [s for s in self.msgs if s < cut]:
            del self.msgs[seq]
        self.replaced.forget_before(cut, set())
        sizes = self.result_sizes
        self.result_sizes = {p: v for p, v in sizes.items() if p[0] >= cut}
        del self._answers[: bisect_left(self._answers, cut)]
        del self._results[: bisect_left(self._results, (cut, -1))]
        self.first_kept = cut
        self.first_request = cut
        if self.latest_request is not None and self.latest_request < cut:
            self.latest_request = None
        self.pinned = Pinned()
        # Once a summary of ours follows, the head is the block alone: the rest of its
        # message (a tool call whose result the summary took) goes into that summary.
        block = block_at(self.msgs[cut], edit.block)
        self.pinned.first = {"role": "assistant", "content": [clone(block)]}
        self.shown.refill([self.render(seq) for seq in range(cut, self.n)])
        self.anchor = None


__all__ = ["Pos", "Replaced", "SessionState", "answer_message", "clone"]
