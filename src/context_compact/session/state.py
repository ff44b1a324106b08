"""The session's state: the log tail, the edits applied to it, and the view derived from both.

    view = prefix + [render(seq) for seq in first_kept .. n-1]
    prefix = [first request] + [summary message] + pinned user messages older than first_kept
             (+ the closing message of recent steps, when the summary closed the turn)
    render(seq) = the logged message with its replaced blocks (persisted or cleared results)

Pinned user messages (``pins``, oldest first, the newest always among them) are the user's
own words, verbatim, each after the short assistant text it answered (``answered``, kept in
the edit as data since that message leaves memory); ``passes.summarize`` chooses them within
the policy's budget and names those it folded into the summary.

Everything that changes the view is a record applied by ``apply``: ``message`` (one more
logged message), ``edit`` (``persist``, ``clear``, ``summarize``: which positions, which
file, which text), ``calibrate``, ``overhead`` and ``restart``. The live engine and a resumed
one apply the same records through the same function, so a session reopened from its
journal sends the same view, byte for byte.

Memory is O(view): messages before ``first_kept`` leave memory when a summary covers them
(the store has them), except the pinned first and latest requests.
"""

from __future__ import annotations

import copy
from typing import Any

from ..keys import ROOT, content_key
from ..messages import (
    Message,
    block_type,
    blocks,
    is_request,
    is_tool_result,
    opens_with_thinking,
)
from ..sizing import TokenCounter

Pos = tuple[int, int]
_ATOMS = (str, int, float, bool, type(None))


def clone(value: Any) -> Any:
    """A private deep copy of JSON-shaped data (several times faster than ``copy.deepcopy``
    on messages); anything else is deep-copied the slow way."""
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    if isinstance(value, _ATOMS):
        return value
    return copy.deepcopy(value)


Record = dict[str, Any]


def answer_message(text: str) -> Message:
    """The assistant text a pinned user message answered, as it stands before it in view."""
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


class SessionState:
    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.n = 0
        self.overhead = 0
        self.ratio = 1.0
        self.reset()

    def reset(self) -> None:
        """A new conversation: the log goes on (positions keep counting), the view restarts."""
        self.base = self.n
        self.head = ROOT
        self.msgs: dict[int, Message] = {}
        self.first_kept = self.n
        self.first_request: int | None = None
        self.latest_request: int | None = None
        # The turn in progress (``messages.turn_start``: the assistant messages since the last
        # run of user messages without tool results) and whether it opened with a thinking
        # block: then the API wants the first assistant message of what is kept of that turn
        # to open with one too.
        self.turn_first: int | None = None
        self.turn_thinks = False
        self._run_ends_turn = True  # the user run just before holds no tool result
        self._run_open = False  # the last logged message is a user message
        self.repl: dict[Pos, dict[str, Any]] = {}
        self.copies: dict[Pos, str] = {}
        self.cleared: set[Pos] = set()
        self.summary: Message | None = None
        self.summary_text: str | None = None
        self.summaries = 0
        # Pinned messages (the first request among them), the assistant text each answered,
        # the archive holding each one, and the user messages folded into the summary.
        self.pins: list[int] = []
        self.answered: dict[int, str] = {}
        self.pin_archive: dict[int, str] = {}
        self.folded: list[tuple[int, str]] = []
        self.folded_more = 0
        self.prefix: list[Message] = []
        self.view: list[Message] = []
        self.view_keys: list[str] = []
        self.tokens: list[int] = []
        self.total = 0
        self.use_ids: set[str] = set()
        # Every tool_use id of the conversation, also those a summary took out of the view: a
        # caller that passes its full history must not reuse one (check() of that history).
        self.log_use_ids: set[str] = set()
        # (messages of the view the API measured, its real count); None once that prefix changed.
        self.anchor: tuple[int, int] | None = None

    # -- reading -----------------------------------------------------------------------
    def conversation_len(self) -> int:
        return self.n - self.base

    def render(self, seq: int) -> Message:
        message = self.msgs[seq]
        content = message.get("content")
        if not isinstance(content, list) or not any(
            (seq, bi) in self.repl for bi in range(len(content))
        ):
            rendered: Message = clone(message)
            return rendered
        return {
            **clone({k: v for k, v in message.items() if k != "content"}),
            "content": [
                dict(self.repl[(seq, bi)]) if (seq, bi) in self.repl else clone(block)
                for bi, block in enumerate(content)
            ],
        }

    def view_index(self, seq: int) -> int:
        return len(self.prefix) + seq - self.first_kept

    def estimate(self) -> int:
        return self.total + self.overhead

    def measure(self) -> int:
        """Tokens of the request as it would be sent: the API's last count of the view's head
        plus an estimate of what was appended since, or the whole estimate; either estimate
        scaled by the last observed real/estimated ratio."""
        if self.anchor is not None:
            length, real = self.anchor
            if length <= len(self.view):
                return real + round(sum(self.tokens[length:]) * self.ratio)
        return round(self.estimate() * self.ratio)

    def last_assistant(self) -> int:
        for seq in range(self.n - 1, self.first_kept - 1, -1):
            if self.msgs[seq].get("role") == "assistant":
                return seq
        return self.first_kept - 1

    def legal_cut(self, seq: int) -> bool:
        """Whether the kept part may start at assistant message ``seq``: anywhere before the
        turn in progress; inside it only where a thinking block opens the message, when the
        turn thinks (else the API answers 400: the final turn must open with thinking)."""
        first = self.turn_first
        if first is None or seq < first or not self.turn_thinks:
            return True
        return opens_with_thinking(self.msgs[seq])

    def turn_starts(self) -> list[int]:
        return [
            seq
            for seq in range(self.first_kept, self.n)
            if self.msgs[seq].get("role") == "assistant"
        ]

    def results(self, start: int, stop: int) -> list[tuple[Pos, dict[str, Any]]]:
        return [
            ((seq, bi), block)
            for seq in range(max(start, self.first_kept), stop)
            if self.msgs[seq].get("role") == "user"
            for bi, block in enumerate(blocks(self.msgs[seq]))
            if block_type(block) == "tool_result"
        ]

    # -- changing ----------------------------------------------------------------------
    def _set_view(self, index: int, message: Message) -> None:
        tokens = self.counter.count(message)
        self.total += tokens - self.tokens[index]
        self.view[index] = message
        self.view_keys[index] = content_key(message)
        self.tokens[index] = tokens
        if self.anchor is not None and index < self.anchor[0]:
            self.anchor = None

    def _push_view(self, message: Message, key: str | None = None) -> None:
        tokens = self.counter.count(message)
        self.view.append(message)
        self.view_keys.append(key or content_key(message))
        self.tokens.append(tokens)
        self.total += tokens

    def _rebuild(self) -> None:
        self.view, self.view_keys, self.tokens, self.total = [], [], [], 0
        for message in self.prefix:
            self._push_view(message)
        for seq in range(self.first_kept, self.n):
            self._push_view(self.render(seq))
        self.use_ids = {
            b["id"] for m in self.view for b in blocks(m) if block_type(b) == "tool_use"
        }
        self.anchor = None

    def add_message(self, record: Record, key: str) -> None:
        seq, message = record["seq"], record["message"]
        if seq != self.n:
            raise ValueError(f"journal out of order: message {seq} where {self.n} was expected")
        self.msgs[seq] = message
        self.n += 1
        self.head = record["id"]
        if is_request(message):
            if seq == self.base:
                self.first_request = seq
            self.latest_request = seq
        if message.get("role") == "user":
            results = is_tool_result(message)
            self._run_ends_turn = (self._run_ends_turn or not self._run_open) and not results
            self._run_open = True
        else:
            # A new turn after a run of user messages without results (or the first message).
            if (self._run_open and self._run_ends_turn) or self.turn_first is None:
                self.turn_first, self.turn_thinks = seq, opens_with_thinking(message)
            self._run_open = False
        ids = [b["id"] for b in blocks(message) if block_type(b) == "tool_use"]
        self.use_ids.update(ids)
        self.log_use_ids.update(ids)
        self._push_view(clone(message), key)

    def apply(self, record: Record) -> None:
        kind = record["kind"]
        if kind == "edit":
            self._apply_edit(record)
        elif kind == "calibrate":
            self.ratio = record["ratio"]
            anchor = record.get("anchor")
            self.anchor = (anchor[0], anchor[1]) if anchor else None
            if "kinds" in record:
                self.counter.set_factors(record["kinds"])
        elif kind == "overhead":
            self.overhead = record["tokens"]
        elif kind == "restart":
            self.reset()

    def _apply_edit(self, edit: Record) -> None:
        op = edit["op"]
        if op in ("persist", "clear"):
            touched = set()
            for seq, bi, path, text in edit["blocks"]:
                block = self.msgs[seq]["content"][bi]
                self.repl[(seq, bi)] = {**block, "content": text}
                self.copies[(seq, bi)] = path
                if op == "clear":
                    self.cleared.add((seq, bi))
                touched.add(seq)
            for seq in sorted(touched):
                self._set_view(self.view_index(seq), self.render(seq))
        elif op == "summarize":
            cut = edit["cut"]
            self.summary = edit["message"]
            content = self.summary.get("content") if self.summary else None
            self.summary_text = edit.get("text", content if isinstance(content, str) else None)
            self.summaries += 1
            pins = [seq for seq in edit["pins"] if seq in self.msgs]
            answered = {int(seq): text for seq, text in edit.get("answered", {}).items()}
            self.pins = pins
            self.answered = {seq: answered[seq] for seq in pins if seq in answered}
            self.pin_archive = {
                seq: edit["archive"] if seq >= edit["start"] else self.pin_archive.get(seq, "")
                for seq in pins
                if seq != self.first_request
            }
            self.folded = [(seq, path) for seq, path in edit.get("folded", [])]
            self.folded_more = edit.get("folded_more", 0)
            head = [self.render(seq) for seq in pins if seq == self.first_request]
            tail: list[Message] = []
            for seq in pins:
                if seq == self.first_request:
                    continue
                if seq in self.answered:
                    tail.append(answer_message(self.answered[seq]))
                tail.append(self.render(seq))
            carry = edit.get("carry")
            self.prefix = [*head, self.summary, *tail, *([carry] if carry else [])]
            keep = set(pins)
            for seq in [s for s in self.msgs if s < cut and s not in keep]:
                del self.msgs[seq]
            self.repl = {p: b for p, b in self.repl.items() if p[0] >= cut or p[0] in keep}
            self.copies = {p: c for p, c in self.copies.items() if p[0] >= cut or p[0] in keep}
            self.cleared = {p for p in self.cleared if p[0] >= cut}
            self.first_kept = cut
            if edit.get("closes"):
                # The view now ends with user messages that hold no tool result: the turn in
                # progress is over, the next assistant message opens a new one.
                self.turn_first, self.turn_thinks = None, False
                self._run_open, self._run_ends_turn = True, True
            self._rebuild()
        else:
            raise ValueError(f"unknown edit {op!r} in the session journal")


__all__ = ["Pos", "Record", "SessionState", "answer_message"]
