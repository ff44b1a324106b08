"""Probes: what an agent can still answer once content has left its view, with no model.

Every piece of a session's original content is an *atom*: a text block (or string content)
of a user or assistant message, a ``tool_use`` block, a ``tool_result`` block. An atom
*leaves the view* at a call when the view that call returns no longer holds it as it was
(gone, cut to a preview, cleared, summarized). From the atoms that leave, ``Ledger.probes``
derives questions whose answers are exact strings of the original content:

    error        what error did `C` give?           the last error line of C's result
    file         which files did you write or edit   each path a write/edit call named
                 with `T`?
    last_read    which file did you read last with   the path of the newest read, if it left
                 `T`?
    last_result  what did `C` print last?            the last line of the newest command's
                                                     result, if that result left
    next_step    what did you say you'd do next?     the next-step sentence of the newest
                                                     assistant text, if it left
    constraint   what did the user tell you?         each constraint/correction sentence of a
                                                     user message that left

Each probe carries a ``key``: the ``recall`` query an agent could type knowing only the
question (the command C, or the tool's name T, as the question names them), never the
answer. ``next_step`` and
``constraint`` questions name nothing to search for: their key is None and they are
answered only in view.

``judge`` answers a probe against the view the model gets next and a recall function:
*view* when the answer is in the view's text, *recall* when one ``recall(key)`` query's
result holds it (its pages read in order; ``Verdict.page`` says which page, of
``engine.PAGE`` characters), *lost* otherwise. Texts are compared with whitespace runs as one
space (``facts.squash``, as summaries are scored). Everything here is pure: a ledger only
reads the messages it is given, and a probe derived from a message list is always answered
by that list's own text (the property the tests check).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from context_compact.engine import PAGE
from context_compact.messages import Message, block_type, blocks, is_request
from context_compact.summary.facts import squash
from context_compact.summary.prompts import ours

from .probe_atoms import (
    CONSTRAINT,
    MAX_ANSWER,
    MAX_KEY,
    MAX_USER,
    MIN_ANSWER,
    NEXT_STEP,
    PATCHED,
    WRAPPER,
    Atom,
    Call,
    Key,
    _clip,
    _command,
    _first_line,
    _result_text,
    atoms,
    classify,
    error_line,
    sentences,
)
from .probe_atoms import KINDS as KINDS
from .probe_atoms import OUTCOMES as OUTCOMES
from .probe_atoms import Probe as Probe
from .probe_atoms import Verdict as Verdict
from .probe_atoms import renderings as renderings


@dataclass
class Ledger:
    """The originals of a session's content, registered as the loop appends them, and the
    newest read, command and assistant text (what ``last_read``, ``last_result`` and
    ``next_step`` ask about: each only once the newest has left)."""

    originals: dict[Key, Atom] = field(default_factory=dict)
    calls: dict[str, Call] = field(default_factory=dict)
    last_read: str | None = None
    last_command: str | None = None
    count: int = 0
    last_said: Key | None = None
    """The newest assistant text (``next_step`` asks only about it)."""

    def add(self, messages: Iterable[Any]) -> None:
        for message in messages:
            if not isinstance(message, dict):
                continue
            message = cast(Message, message)  # a peer's view: dicts of the canonical shape
            user_typed = is_request(message)
            for key, _ in atoms(message):
                if key in self.originals:
                    continue
                if key[0] == "text" and key[1] == "user" and (not user_typed or ours(key[2])):
                    continue  # a note this library (or a harness) wrote, not the user's words
                atom = self._atom(key, message)
                self.originals[key] = atom
                self.count += 1
                if key[0] == "text" and key[1] == "assistant":
                    self.last_said = key
                if key[0] == "use" and atom.block is not None:
                    call = classify(atom.block)
                    self.calls[call.id] = call
                    if call.reads:
                        self.last_read = call.id
                    if call.command is not None:
                        self.last_command = call.id

    def _atom(self, key: Key, message: Message) -> Atom:
        role = str(message.get("role"))
        if key[0] == "text":
            return Atom(key, self.count, role, key[2])
        block = next(
            b
            for b in blocks(message)
            if block_type(b) == ("tool_use" if key[0] == "use" else "tool_result")
            and str(b.get("id" if key[0] == "use" else "tool_use_id")) == key[1]
        )
        text = _result_text(block) if key[0] == "result" else ""
        return Atom(key, self.count, role, text, block)

    def left(self, before: dict[Key, Any], after: dict[Key, Any]) -> list[Atom]:
        """The originals rendered in ``before`` and not (or no longer alike) in ``after``."""
        gone = []
        for key, shown in before.items():
            atom = self.originals.get(key)
            if atom is None:
                continue
            now = after.get(key, _MISSING)
            if now is not shown and now != shown:
                gone.append(atom)
        return sorted(gone, key=lambda a: a.position)

    def probes(self, left: Sequence[Atom]) -> list[Probe]:
        """The probes the atoms in ``left`` give (oldest first, no repeats)."""
        out: list[Probe] = []
        said: list[Atom] = []
        for atom in left:
            if atom.key[0] == "result":
                out += self._result_probes(atom)
            elif atom.key[0] == "use":
                out += self._use_probes(atom)
            elif atom.role == "assistant":
                said.append(atom)
            elif atom.role == "user" and len(atom.text) <= MAX_USER:
                for s in sentences(atom.text):
                    if CONSTRAINT.search(s) and len(s) >= MIN_ANSWER:
                        out.append(
                            Probe("constraint", "what did the user tell you?", s[:MAX_ANSWER], None)
                        )
        # The newest thing the assistant said, if it left (a newer statement still in view,
        # or one that left before, is where the work stands): its next step, if it names one.
        if said and said[-1].key == self.last_said:
            usable = [
                s for s in sentences(said[-1].text) if NEXT_STEP.search(s) and len(s) >= MIN_ANSWER
            ]
            if usable:
                question = "what did you say you'd do next?"
                out.append(Probe("next_step", question, usable[-1][:MAX_ANSWER], None))
        return list({p.ident: p for p in out}.values())

    def _result_probes(self, atom: Atom) -> list[Probe]:
        call = self.calls.get(atom.key[1])
        if call is None:
            return []
        flagged = atom.block is not None and atom.block.get("is_error") is True
        target = call.command or next(iter(call.writes + call.reads), None) or call.name
        # Typed as it was written (recall matches inputs as written), first line only.
        key = _first_line(target)[:MAX_KEY].strip()
        out = []
        # A file the agent read may hold "Error" in its code: only what a command printed,
        # or a result the tool flagged, says an error happened.
        error = error_line(atom.text, flagged) if call.command is not None or flagged else None
        if error and len(squash(error)) >= MIN_ANSWER and key:
            out.append(
                Probe("error", f"what error did `{key}` give?", _clip(error, MAX_ANSWER), key)
            )
        if call.command is not None and call.id == self.last_command and key:
            lines = [line for line in atom.text.splitlines() if not WRAPPER.match(line)]
            last = _clip(lines[-1], MAX_ANSWER) if lines else ""
            if len(last) >= MIN_ANSWER:
                out.append(Probe("last_result", f"what did `{key}` print last?", last, key))
        return out

    def _use_probes(self, atom: Atom) -> list[Probe]:
        call = self.calls.get(atom.key[1])
        if call is None:
            return []
        tool = "apply_patch" if call.command and PATCHED.search(call.command) else call.name
        out = [
            Probe("file", f"which files did you write or edit with `{tool}`?", path, tool)
            for path in call.writes
        ]
        if call.reads and call.id == self.last_read:
            question = f"which file did you read last with `{tool}`?"
            out.append(Probe("last_read", question, call.reads[-1], tool))
        return out


_MISSING = object()


def probes_of(messages: Sequence[Any]) -> list[Probe]:
    """The probes of a whole message list, as if all of it left the view at once."""
    ledger = Ledger()
    ledger.add(messages)
    return ledger.probes(ledger.left(renderings(messages), {}))


def view_text(messages: Iterable[Any]) -> str:
    """What a model reads in a list of messages, whitespace squashed: text, tool names and
    inputs (their strings as written, and as JSON), tool results."""
    parts: list[str] = []
    for message in messages:
        if not isinstance(message, dict):
            parts.append(str(message))
            continue
        message = cast(Message, message)  # a peer's view: dicts of the canonical shape
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
            continue
        for block in blocks(message):
            kind = block_type(block)
            if kind == "text":
                parts.append(str(block.get("text", "")))
            elif kind == "tool_use":
                args = block.get("input")
                parts.append(str(block.get("name", "")))
                parts.append(json.dumps(args, ensure_ascii=False, default=str))
                if isinstance(args, dict):
                    parts += [_command(v) or "" for v in args.values()]
            elif kind == "tool_result":
                parts.append(_result_text(block))
            else:
                parts.append(json.dumps(block, ensure_ascii=False, default=str))
    return squash("\n".join(parts))


Recall = Callable[[str], str]
"""One recall query: its key, and everything it returns (all its pages, in order)."""


def judge(probe: Probe, seen: str, recall: Recall | None) -> Verdict:
    """``probe`` against ``seen`` (a ``view_text``) and one ``recall(probe.key)`` query."""
    answer = squash(probe.answer)
    if answer in seen:
        return Verdict("view")
    if recall is None or probe.key is None:
        return Verdict("lost")
    found = recall(probe.key)
    at = found.find(probe.answer)
    if at < 0:
        squashed = squash(found)
        at = squashed.find(answer)
        if at < 0:
            return Verdict("lost")
    return Verdict("recall", at // PAGE + 1)


__all__ = [
    "KINDS",
    "OUTCOMES",
    "Atom",
    "Call",
    "Ledger",
    "Probe",
    "Verdict",
    "classify",
    "error_line",
    "judge",
    "probes_of",
    "renderings",
    "view_text",
]
