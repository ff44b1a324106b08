"""What the probes read in a session's content: its atoms (the text, tool_use and tool_result
blocks, keyed), each tool call classified as a read, a write or a command, the error line of
a result, and the sentences of a text.

The patterns and limits here decide which questions ``probes.Ledger`` can ask and what their
exact answers are; they read only the original content, never a view.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

from context_compact.messages import (
    Block,
    Message,
    blocks,
    is_result,
    is_text,
    is_tool_use,
    readable_text,
    result_text,
)
from context_compact.summary.facts import squash

KINDS = ("error", "file", "last_read", "last_result", "next_step", "constraint")
OUTCOMES = ("view", "recall", "lost")

COMMAND_KEYS = ("command", "cmd")
PATH_KEYS = ("path", "file_path", "file", "filename", "notebook_path")
WRITE_WORDS = ("edit", "write", "create", "replace", "insert", "patch")
READ_WORDS = ("read", "view", "open", "cat")
# str_replace_editor (SWE-agent, OpenHands): ``command`` is a sub-command, not a shell line.
EDITOR_WRITES = frozenset({"create", "str_replace", "insert", "undo_edit", "write", "edit"})
EDITOR_READS = frozenset({"view", "read"})
SHELLS = frozenset({"bash", "sh", "zsh"})
PATCHED = re.compile(r"^\*\*\* (?:Add|Update) File: (\S+)", re.M)
# An error line of a command's output; a bare "Traceback (most recent call last):" names no
# error, the line that ends the traceback does.
ERROR_LINE = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception)\b|\berror(?:\[\w+\])?:|\bERROR\b|\bfatal:|\bpanic:"
)
# A line that says something failed without naming what: the error line only when no line
# names one ("=== 1 failed, 2 passed ===" under "FAILED test_x - KeyError: 'rate'").
FAILED_LINE = re.compile(r"\bFAILED\b|\bfailed\b")
TRACEBACK = re.compile(r"^Traceback \(most recent call last\):?$")
NEXT_STEP = re.compile(
    r"\b(?:next|now I|I'll|I will|we'll|we will|let me|let's|going to|then I|I need to)\b", re.I
)
CONSTRAINT = re.compile(
    r"\b(?:don't|do not|never|always|must|mustn't|should|shouldn't|only|keep|instead|"
    r"without|make sure|avoid|not|no|stop|wrong|actually)\b",
    re.I,
)
# A line that only opens or closes a tag a harness wraps output in (``</output_tail>``), or
# that holds nothing: not what a command printed.
WRAPPER = re.compile(r"^\s*(?:</?[\w-]+>)?\s*$")
# Code a command printed (a file read with cat or grep) names errors without one happening.
CODE = re.compile(r"\b(?:raise|except|import|class|def|throw|catch)\b")
# Sentences end at . ! ? or : before a space, a newline, or a capital glued on ("wish.This").
SENTENCE = re.compile(r"(?<=[.!?:])\s+|\n+|(?<=[a-z][.!?:])(?=[A-Z])")
# Shorter answers are found in almost any text: they say nothing about what was kept.
MIN_ANSWER = 12
# A constraint or a correction is typed by a person; a longer user message is a pasted
# document, hook output or an earlier summary, whose sentences are not constraints.
MAX_USER = 1_000
MAX_ANSWER = 200
MAX_KEY = 200

Key = tuple[str, ...]


@dataclass(frozen=True)
class Call:
    """What a ``tool_use`` did, as far as probes care."""

    id: str
    name: str
    command: str | None = None
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Atom:
    key: Key
    position: int
    role: str
    text: str = ""
    """The text of a text atom, or the readable text of a result."""
    block: Block | None = None


@dataclass(frozen=True)
class Probe:
    kind: str
    question: str
    answer: str
    key: str | None

    @property
    def ident(self) -> tuple[str, str, str | None]:
        return (self.kind, self.answer, self.key)


@dataclass(frozen=True)
class Verdict:
    outcome: str
    page: int | None = None
    """With ``recall``: the page (1 = the first ``PAGE`` characters) the answer is on."""


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _clip(text: str, limit: int) -> str:
    return squash(text)[:limit].strip()


def _command(value: Any) -> str | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        # ["bash", "-lc", "the script"]: the script is the command.
        if len(value) == 3 and value[0].rsplit("/", 1)[-1] in SHELLS and value[1].startswith("-"):
            return str(value[2])
        return " ".join(value)
    return value if isinstance(value, str) and value.strip() else None


def classify(block: Block) -> Call:
    """The command, reads and writes of one ``tool_use`` block (its input as given)."""
    name = str(block.get("name") or "tool")
    lowered = name.lower()
    args = block.get("input")
    args = args if isinstance(args, dict) else {}
    paths = [v for k in PATH_KEYS if isinstance(v := args.get(k), str) and v.strip()]
    raw = next((args[k] for k in COMMAND_KEYS if k in args), None)
    writes: list[str] = []
    reads: list[str] = []
    command = None
    if isinstance(raw, str) and raw in EDITOR_WRITES | EDITOR_READS and paths:
        (writes if raw in EDITOR_WRITES else reads).extend(paths)
    else:
        command = _command(raw)
        if any(w in lowered for w in WRITE_WORDS):
            writes.extend(paths)
        elif any(w in lowered for w in READ_WORDS):
            reads.extend(paths)
    for value in args.values():  # apply_patch, as a tool or inside a shell command
        text = _command(value) or ""
        writes.extend(PATCHED.findall(text))
    return Call(
        str(block.get("id")),
        name,
        command,
        tuple(dict.fromkeys(reads)),
        tuple(dict.fromkeys(writes)),
    )


def _result_text(block: Block) -> str:
    text = readable_text(block)
    return text if text is not None else result_text(block)


def error_line(text: str, flagged: bool) -> str | None:
    """The last line of a result that names an error (else the last that says something
    failed; else, when the tool flagged an error, its first line); None when there is none."""
    lines = [
        line.strip()
        for line in text.splitlines()
        if not TRACEBACK.match(line.strip()) and not CODE.search(line)
    ]
    for pattern in (ERROR_LINE, FAILED_LINE):
        found = [line for line in lines if pattern.search(line)]
        if found:
            return found[-1]
    return _first_line(text) if flagged else None


def sentences(text: str) -> list[str]:
    return [s for s in (squash(p) for p in SENTENCE.split(text)) if s]


def atoms(message: Message) -> list[tuple[Key, Any]]:
    """The atoms of one message, each with how it is rendered (what a view must hold
    unchanged for the atom to still be in it)."""
    role = str(message.get("role"))
    content = message.get("content")
    if isinstance(content, str):
        return [(("text", role, content), content)] if content.strip() else []
    out: list[tuple[Key, Any]] = []
    for block in blocks(message):
        if is_text(block) and str(block.get("text", "")).strip():
            out.append((("text", role, str(block["text"])), block["text"]))
        elif is_tool_use(block):
            out.append((("use", str(block.get("id"))), block))
        elif is_result(block):
            out.append((("result", str(block.get("tool_use_id"))), block.get("content")))
    return out


def renderings(messages: Iterable[Any]) -> dict[Key, Any]:
    """Every atom of ``messages`` (dicts only) and how it is rendered there."""
    out: dict[Key, Any] = {}
    for message in messages:
        if isinstance(message, dict):
            out.update(atoms(cast(Message, message)))  # a peer's view: canonical dicts
    return out
