"""The ledger: what the agent did, kept by the engine from the tool calls and results it logs,
with no model call. Files read (hash of what was seen, line ranges), files changed (latest
hash when the whole content was written, the message that changed them), commands run (exit
status when the result states one, first error line), the last test run (counts and failing
names from the runner's own summary: ``outcomes.py``), and the errors still open.

A pure function of the logged messages, fed one at a time (``add``) as ``SessionState``
logs them: the live engine, a resume, a checkpoint's restore and an ``undo``'s rebuild all
feed the same messages in the same order, so they hold the same ledger. A call is recorded
when its result arrives (a failed write changes no file); its call side waits in
``pending``. Every list is bounded (``MAX_*``), the oldest entries leaving first, so the
ledger, and the checkpoint that carries it (``as_json``, ``from_json``), stay small.

An error is open until the same command, or the same kind of call on the same file,
succeeds later.

A file's hash after an edit is computed only when it is certain (never a wrong hash): the
ledger keeps the content of the newest ``MAX_KNOWN`` files it saw written whole (``known``,
``MAX_KNOWN_TOTAL`` characters in all), applies to it the replacements an edit states
(``calls.applied``) and keeps the result; any other change to the file (an edit it cannot
apply exactly, a patch, a command) records the change with no hash and forgets the content.
A shell command that is not a plain read may change any file, so it forgets every content
kept; so does a change to a path the ledger knows no content of, for every kept file of the
same name (one file can be named two ways). Reads do not make a content known: the tools
number, clip or redact what they show.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..messages import Block, Message, block_type, blocks
from .calls import Call, applied, command_text, digest, read_call
from .ledger_rules import LedgerRules
from .outcomes import clip, exit_status, first_error, output_text, test_summary

MAX_FILES = 400
MAX_RANGES = 8
MAX_COMMANDS = 50
MAX_ERRORS = 20
MAX_PENDING = 64
MAX_KNOWN = 16
MAX_KNOWN_TOTAL = 200_000
"""Characters of kept content in all: a checkpoint carries them."""
_TESTS = (
    "pytest",
    "unittest",
    "tox",
    "nox",
    "jest",
    "vitest",
    "mocha",
    "go test",
    "cargo test",
    "npm test",
    "npm run test",
    "yarn test",
    "pnpm test",
    "make test",
    "mix test",
    "rspec",
    "phpunit",
    "ctest",
    "manage.py test",
    "runtests",
)


def result_text(block: Block) -> str:
    """The text of a ``tool_result`` block's content (its text blocks joined)."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [str(b.get("text", "")) for b in content if isinstance(b, dict)]
        return "\n".join(p for p in parts if p)
    return ""


def _failed(text: str, is_error: bool) -> bool:
    head = text.lstrip()[:40].lower()
    return is_error or head.startswith(("error", "<tool_use_error>"))


def looks_like_tests(command: str) -> bool:
    return any(word in command for word in _TESTS)


class Ledger:
    def __init__(self, rules: LedgerRules | None = None) -> None:
        self.rules = rules or LedgerRules()
        # path -> [seq, sha, [[first, last], ...], reads]
        self.read: dict[str, list[Any]] = {}
        # path -> [seq, op, sha, changes]; newest last (a change moves its file to the end)
        self.changed: dict[str, list[Any]] = {}
        # [seq, command, exit, error line]
        self.commands: list[list[Any]] = []
        self.commands_run = 0
        # [seq, command, runner, passed, failed, [failing...], exit]
        self.test: list[Any] | None = None
        self.test_runs = 0
        # [seq, what, line]; ``what`` is the command, or ``kind path``
        self.errors: list[list[Any]] = []
        self.pending: dict[str, list[Any]] = {}
        self.current: str | None = None
        # path -> the file's whole content as the ledger knows it for certain; newest last
        self.known: dict[str, str] = {}

    def __bool__(self) -> bool:
        return bool(self.read or self.changed or self.commands or self.errors or self.pending)

    # -- feeding ---------------------------------------------------------------------------
    def add(self, seq: int, message: Message) -> None:
        """Take one logged message: its tool calls wait for their results, its results
        complete the calls they answer."""
        role = message.get("role")
        for block in blocks(message):
            kind = block_type(block)
            if role == "assistant" and kind == "tool_use":
                self._call(seq, block)
            elif role == "user" and kind == "tool_result":
                self._result(seq, block)

    def _call(self, seq: int, block: Block) -> None:
        name, use_id = block.get("name"), block.get("id")
        if not isinstance(name, str) or not isinstance(use_id, str):
            return
        call = read_call(name, block.get("input"), self.rules, self.current)
        if call is None:
            return
        self.pending[use_id] = [seq, call.as_json()]
        while len(self.pending) > MAX_PENDING:
            del self.pending[next(iter(self.pending))]

    def _result(self, seq: int, block: Block) -> None:
        waiting = self.pending.pop(str(block.get("tool_use_id")), None)
        if waiting is None:
            return
        at, call = waiting[0], Call.from_json(waiting[1])
        text = result_text(block)
        failed = _failed(text, bool(block.get("is_error")))
        if call.kind == "shell" or call.command is not None:
            self._ran(at, call, text, bool(block.get("is_error")))
            return
        what = f"{call.kind} {call.paths[0] if call.paths else ''}".strip()
        if failed:
            self._error(at, what, first_error(text) or clip(text))
            return
        self._solved(what)
        if call.kind == "read":
            self._read(at, call.paths[0], call.lines, digest(text))
        elif call.kind == "open":
            self.current = call.paths[0]
            self._read(at, call.paths[0], call.lines, digest(text))
        elif call.kind == "patch":
            for path in call.paths:
                self._change(at, path, "patched", None)
        elif call.kind == "write":
            self._change(at, call.paths[0], "written", call.sha, call.text)
            self.current = call.paths[0]
        else:
            path = call.paths[0]
            before = self.known.get(path)
            after = applied(before, call.edits) if before is not None and call.edits else None
            self._change(at, path, "edited", digest(after) if after is not None else None, after)

    def _ran(self, seq: int, call: Call, raw: str, is_error: bool) -> None:
        command = call.command or ""
        text = output_text(raw)
        status = exit_status(raw, is_error)
        error = first_error(text) if status not in (None, 0) or is_error else None
        self.commands.append([seq, command, status, error])
        self.commands_run += 1
        del self.commands[:-MAX_COMMANDS]
        failed = status not in (None, 0) or (status is None and is_error)
        summary = test_summary(text)
        if summary is not None or looks_like_tests(command):
            self.test_runs += 1
            self.test = [
                seq,
                command,
                summary.runner if summary else None,
                summary.passed if summary else None,
                summary.failed if summary else None,
                list(summary.failing) if summary else [],
                status,
            ]
        if failed and summary is None:
            self._error(seq, command, error or clip(text) or f"exit status {status}")
        elif not failed:
            self._solved(command)
        if call.kind not in ("read", "open"):
            self.known.clear()  # a command may have changed any file
        if call.kind == "open" and call.paths and not failed:
            self.current = call.paths[0]
            self._read(seq, call.paths[0], call.lines, digest(text))
        elif call.kind == "read" and not failed:
            # One file's output is what was seen of it; several files' are not told apart.
            sha = digest(text) if len(call.paths) == 1 else None
            for path in call.paths:
                self._read(seq, path, call.lines, sha)
        elif call.kind in ("write", "edit", "patch", "shell") and not failed:
            op = {"write": "written", "edit": "edited", "patch": "patched"}.get(call.kind)
            for path in call.paths:
                self._change(seq, path, op or "by a command", None)
            if call.kind == "write" and call.paths:
                self.current = call.paths[0]

    def _read(
        self, seq: int, path: str, lines: tuple[int, int | None] | None, sha: str | None
    ) -> None:
        entry = self.read.pop(path, None) or [seq, None, [], 0]
        entry[0], entry[1], entry[3] = seq, sha, entry[3] + 1
        span = list(lines) if lines is not None else None
        ranges = [r for r in entry[2] if r != span]
        entry[2] = [*ranges, span][-MAX_RANGES:]
        self.read[path] = entry
        while len(self.read) > MAX_FILES:
            del self.read[next(iter(self.read))]

    def _change(
        self, seq: int, path: str, op: str, sha: str | None, content: str | None = None
    ) -> None:
        entry = self.changed.pop(path, None)
        changes = entry[3] + 1 if entry is not None else 1
        self.changed[path] = [seq, op, sha, changes]
        while len(self.changed) > MAX_FILES:
            del self.changed[next(iter(self.changed))]
        self._know(path, content)

    def _know(self, path: str, content: str | None) -> None:
        """``path`` now holds ``content`` (None: what, the ledger does not know)."""
        if path not in self.known:
            # Another name of the same file may be kept: forget those of its name.
            name = path.rsplit("/", 1)[-1]
            for other in [p for p in self.known if p.rsplit("/", 1)[-1] == name]:
                del self.known[other]
        self.known.pop(path, None)
        if content is not None:
            self.known[path] = content
            while len(self.known) > MAX_KNOWN or (
                sum(map(len, self.known.values())) > MAX_KNOWN_TOTAL
            ):
                del self.known[next(iter(self.known))]

    def _error(self, seq: int, what: str, line: str) -> None:
        self.errors = [e for e in self.errors if e[1] != what]
        self.errors.append([seq, what, clip(line)])
        del self.errors[:-MAX_ERRORS]

    def _solved(self, what: str) -> None:
        if any(e[1] == what for e in self.errors):
            self.errors = [e for e in self.errors if e[1] != what]

    # -- checkpoints -----------------------------------------------------------------------
    def as_json(self) -> dict[str, Any]:
        return {
            "read": [[path, *entry] for path, entry in self.read.items()],
            "changed": [[path, *entry] for path, entry in self.changed.items()],
            "commands": self.commands,
            "commands_run": self.commands_run,
            "test": self.test,
            "test_runs": self.test_runs,
            "errors": self.errors,
            "pending": [[use_id, *entry] for use_id, entry in self.pending.items()],
            "current": self.current,
            "known": [[path, content] for path, content in self.known.items()],
        }

    @staticmethod
    def from_json(raw: dict[str, Any] | None, rules: LedgerRules | None = None) -> Ledger:
        """The ledger ``as_json`` wrote (an empty one for None: a checkpoint from before)."""
        ledger = Ledger(rules)
        if raw is None:
            return ledger
        ledger.read = {str(e[0]): list(e[1:]) for e in raw["read"]}
        ledger.changed = {str(e[0]): list(e[1:]) for e in raw["changed"]}
        ledger.commands = [list(c) for c in raw["commands"]]
        ledger.commands_run = int(raw["commands_run"])
        ledger.test = list(raw["test"]) if raw["test"] is not None else None
        ledger.test_runs = int(raw["test_runs"])
        ledger.errors = [list(e) for e in raw["errors"]]
        ledger.pending = {str(e[0]): list(e[1:]) for e in raw["pending"]}
        current = raw.get("current")
        ledger.current = str(current) if current is not None else None
        ledger.known = {str(path): str(content) for path, content in raw.get("known", [])}
        return ledger


def of(messages: Iterable[Message], rules: LedgerRules | None = None) -> Ledger:
    """The ledger of a log, fed from its first message."""
    ledger = Ledger(rules)
    for seq, message in enumerate(messages):
        ledger.add(seq, message)
    return ledger


__all__ = ["Ledger", "command_text", "looks_like_tests", "of", "result_text"]
