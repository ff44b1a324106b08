"""What a history holds that a summary must keep, read off it without a model.

``facts(messages)`` collects, in order of appearance:

* **user words**: the sentences of every user-authored message (``is_request``: text, images
  or documents, no tool results), except the notes this library adds for a summarizer;
* **files**: paths given to tools (``path``, ``file_path``...) and paths written in user or
  assistant text (a slash and an extension, or a bare name with a known extension);
* **commands**: the ``command`` (or ``cmd``) of every tool call, with what its result showed;
* **errors**: lines of tool results that say error, failed, exception or traceback;
* **identifiers**: URLs, UUIDs, hashes (7-40 hex digits, letters and digits), ticket ids
  (``ABC-123``), ``#123`` and backticked names, from user and assistant text and tool inputs.
  Not from tool output: a session reads thousands of them there; those the agent cared about
  it names in its own words.

Each message is read on its own (``_read``: its sentences, names and paths, its tool calls
and results), and the readings are folded in order: which command a result answers, whether
a path was read or changed first, which error line is new. Given a ``Readings`` (one per
summary: its summarizer and its score read the same messages), ``facts`` reads a message
object once however many lists hold it; without one, every call reads afresh (a caller may
have edited a message in place since).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import NamedTuple

from ..messages import Block, Message, block_type, blocks, is_request, readable_text, result_text
from .prompts import ours

_EXTENSIONS = (
    "py|pyi|js|mjs|ts|tsx|jsx|rs|go|java|kt|c|h|cc|cpp|hpp|cs|rb|php|swift|scala|sh|md|rst|txt|"
    "json|jsonl|toml|yaml|yml|cfg|ini|lock|html|css|scss|sql|xml|csv|ipynb|proto|pony|gradle"
)
PATH = re.compile(
    rf"(?<![\w/.:-])(?:\.{{1,2}}/|/|~/)?(?:[\w.@+-]+/)+[\w.@+-]*\.\w{{1,8}}\b"
    rf"|(?<![\w/.:-])[\w-]+\.(?:{_EXTENSIONS})\b"
)
URL = re.compile(r"https?://[^\s<>\"'`)\]]+")
IDENTIFIER = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
    r"|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"
    r"|\b[A-Z][A-Z0-9]+-\d+(?:-\d+)*\b"
    r"|(?<![\w&#])#\d+\b"
)
BACKTICKED = re.compile(r"`([^`\s]{2,80})`")
# An error line: a named exception or error, ``error:``, ``ERROR``, a traceback, FAILED,
# failed, ``fatal:`` or ``panic:``; not every line that says "error" (issue titles, code).
ERROR_WORDS = (
    r"\b[A-Z]\w*(?:Error|Exception)\b|\berror(?:\[\w+\])?:|\bERROR\b|^Traceback\b"
    r"|\bFAILED\b|\bfailed\b|\bfatal:|\bpanic:"
)
ERRORISH = re.compile(rf"^.*(?:{ERROR_WORDS}).*$", re.M)
# The same lines, found by searching each line for the words: ``ERRORISH`` backtracks over
# every line it does not match, which made reading a long result's errors the slowest part
# of a summary's score.
_ERROR_WORD = re.compile(ERROR_WORDS)


# Every line ``ERRORISH`` matches holds one of these words: only such lines are searched.
_ERROR_HINT = re.compile("Error|Exception|error|ERROR|Traceback|FAILED|failed|fatal:|panic:")


def error_lines(text: str) -> list[str]:
    """The lines of ``text`` that ``ERRORISH`` matches, in order (lines end at ``\\n`` only)."""
    out: list[str] = []
    hint, word, pos = _ERROR_HINT.search, _ERROR_WORD.search, 0
    while (found := hint(text, pos)) is not None:
        start = text.rfind("\n", 0, found.start()) + 1
        end = text.find("\n", found.end())
        end = len(text) if end < 0 else end
        line = text[start:end]
        if word(line):
            out.append(line)
        pos = end + 1
    return out


ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
DECISION = re.compile(
    r"\b(?:decid\w*|because|instead|chose|choose|will use|I'll use|going with|prefer)\b", re.I
)
PATH_KEYS = ("path", "file_path", "file", "filename", "notebook_path")
WRITES = ("edit", "write", "create", "replace", "insert", "patch", "apply", "str_replace")


def squash(text: str) -> str:
    """Whitespace runs as one space, terminal colour codes gone: how items are compared with
    a summary."""
    return " ".join(ANSI.sub("", text).split())


def text_of(message: Message) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in blocks(message) if block_type(b) == "text")


@dataclass
class Command:
    command: str
    seq: int
    error: str | None = None
    shown: str = ""
    errors: list[str] = field(default_factory=list)


@dataclass
class Facts:
    """What ``facts`` read, each list oldest first and without repeats."""

    user: list[tuple[int, str]] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    commands: list[Command] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)
    identifiers: dict[str, None] = field(default_factory=dict)
    decisions: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    last_text: str = ""


def sentences(text: str, longest: int = 300) -> list[str]:
    """Sentences (or lines) of ``text`` worth keeping: 8 to ``longest`` characters."""
    out = []
    for piece in SENTENCE.split(text):
        piece = squash(piece)
        if 8 <= len(piece) <= longest and " " in piece:
            out.append(piece)
    return out


def _identifiers(text: str) -> list[str]:
    found = [match.group(0).rstrip(".,;:") for match in URL.finditer(text)]
    found += [match.group(0) for match in IDENTIFIER.finditer(text)]
    found += [match.group(1) for match in BACKTICKED.finditer(text)]
    return found


def _paths(text: str) -> list[str]:
    return [match.group(0) for match in PATH.finditer(URL.sub(" ", text))]


# -- one message read: what it says on its own, whatever comes before it ----------------------


class _Use(NamedTuple):
    """A tool call: the paths its input names, its command and what it names besides."""

    id: str
    name: str
    writes: bool
    paths: tuple[str, ...]
    command: str | None
    command_paths: tuple[str, ...]
    identifiers: tuple[str, ...]


class _Result:
    """A tool result: its error lines and last line, read when a fold first needs them (only
    a command's result, or one the tool flagged, is searched for errors)."""

    __slots__ = ("_errors", "_head", "_shown", "is_error", "use_id")

    def __init__(self, block: Block) -> None:
        text = readable_text(block)
        self._head = (result_text(block) if text is None else text)[:20_000]
        self.use_id = str(block.get("tool_use_id"))
        self.is_error = block.get("is_error") is True
        self._errors: list[str] | None = None
        self._shown: str | None = None

    def errors(self) -> list[str]:
        if self._errors is None:
            found = [squash(line)[:200] for line in error_lines(self._head)]
            self._errors = [e for e in found if e]
        return self._errors

    def shown(self) -> str:
        if self._shown is None:
            lines = self._head.strip().splitlines()
            last = next((line for line in reversed(lines) if line.strip()), None)
            self._shown = ("(no output)" if last is None else squash(last))[:160]
        return self._shown


class _Read(NamedTuple):
    """What one message gives ``facts``, read off it alone (the fold adds the order)."""

    user: tuple[str, ...] = ()  # a user request's sentences
    text: str = ""  # an assistant message's text
    identifiers: tuple[str, ...] = ()
    mentioned: tuple[str, ...] = ()  # paths written in the text
    questions: tuple[str, ...] = ()
    decisions: tuple[str, ...] = ()
    blocks: tuple[_Use | _Result, ...] = ()


_WRITING = re.compile("|".join(WRITES))  # a tool whose name holds one of them writes its path
_ARGS = json.JSONEncoder(ensure_ascii=False, default=str)  # json.dumps builds one a call


def _use(block: Block) -> _Use:
    name = str(block.get("name") or "tool")
    args = block.get("input")
    if not isinstance(args, dict):
        return _Use(str(block.get("id")), name, False, (), None, (), ())
    paths = [v for key in PATH_KEYS if isinstance(v := args.get(key), str) and v]
    command: str | None = None
    command_paths: list[str] = []
    for key in ("command", "cmd"):
        value = args.get(key)
        if isinstance(value, list):
            value = " ".join(str(v) for v in value)
        if isinstance(value, str) and value.strip():
            command, command_paths = squash(value)[:300], _paths(value)
            break
    return _Use(
        str(block.get("id")),
        name,
        _WRITING.search(name.lower()) is not None,
        tuple(paths),
        command,
        tuple(command_paths),
        tuple(_identifiers(_ARGS.encode(args))),
    )


def _read(message: Message) -> _Read:
    role = message.get("role")
    user: list[str] = []
    said = ""
    identifiers: list[str] = []
    mentioned: list[str] = []
    questions: list[str] = []
    decisions: list[str] = []
    if role == "user" and is_request(message):
        text = text_of(message)
        if not ours(text):
            user, identifiers, mentioned = sentences(text), _identifiers(text), _paths(text)
    elif role == "assistant":
        said = text_of(message).strip()
        if said:
            identifiers, mentioned = _identifiers(said), _paths(said)
            for s in sentences(said, 400):
                if s.endswith("?"):
                    questions.append(s)
                elif DECISION.search(s):
                    decisions.append(s)
    parts: list[_Use | _Result] = []
    for block in blocks(message):
        kind = block_type(block)
        if kind == "tool_use":
            parts.append(_use(block))
        elif kind == "tool_result":
            parts.append(_Result(block))
    return _Read(
        tuple(user),
        said,
        tuple(identifiers),
        tuple(mentioned),
        tuple(questions),
        tuple(decisions),
        tuple(parts),
    )


class Readings:
    """The readings of the messages one summary reads, by message object: its summarizer
    and its score read the same messages (``SummaryRequest.readings``), each once. Made for
    one summary and dropped after it: a caller may edit a message in place between calls,
    and a message is read again by the next summary's ``Readings``."""

    __slots__ = ("_reads",)

    def __init__(self) -> None:
        # id -> (the message, its reading): the message is held, so its id is not reused.
        self._reads: dict[int, tuple[Message, _Read]] = {}

    def of(self, message: Message) -> _Read:
        hit = self._reads.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        read = _read(message)
        self._reads[id(message)] = (message, read)
        return read


def facts(messages: list[Message], readings: Readings | None = None) -> Facts:
    """Everything ``extractive_summary`` and ``summary_score`` look for, in one pass: each
    message's own reading (``_read``, or the one ``readings`` holds), folded in order."""
    out = Facts()
    commands: dict[str, Command | None] = {}  # tool_use id -> its command
    seen: set[str] = set()  # the error lines in ``out.errors``
    for seq, message in enumerate(messages):
        read = _read(message) if readings is None else readings.of(message)
        out.user += [(seq, s) for s in read.user]
        if read.text:
            out.last_text = read.text
        for identifier in read.identifiers:
            out.identifiers.setdefault(identifier)
        for path in read.mentioned:
            out.files.setdefault(path, "mentioned")
        out.questions += read.questions
        out.decisions += read.decisions
        for part in read.blocks:
            if isinstance(part, _Use):
                commands[part.id] = _fold_use(part, seq, out)
            else:
                _fold_result(part, seq, out, commands.get(part.use_id), seen)
    return out


def _fold_use(use: _Use, seq: int, out: Facts) -> Command | None:
    for path in use.paths:
        if use.writes or path not in out.files:
            out.files[path] = "changed" if use.writes else "read"
    command = None
    if use.command is not None:
        command = Command(use.command, seq)
        out.commands.append(command)
        for path in use.command_paths:
            out.files.setdefault(path, "mentioned")
    for identifier in use.identifiers:
        out.identifiers.setdefault(identifier)
    return command


def _fold_result(
    result: _Result, seq: int, out: Facts, command: Command | None, seen: set[str]
) -> None:
    # Error lines of what a command printed, or of a result the tool flagged; a file the
    # agent read may well hold the word "error" in its code.
    errors = result.errors() if command is not None or result.is_error else []
    for error in dict.fromkeys(errors):
        if error not in seen:
            seen.add(error)
            out.errors.append((seq, error))
    if command is not None:
        failed = bool(errors) or result.is_error
        command.errors = list(errors) or (["error reported"] if failed else [])
        command.error = command.errors[0] if failed else None
        command.shown = result.shown()


__all__ = [
    "ANSI",
    "DECISION",
    "ERRORISH",
    "PATH",
    "URL",
    "Command",
    "Facts",
    "Readings",
    "error_lines",
    "facts",
    "sentences",
    "squash",
    "text_of",
]
