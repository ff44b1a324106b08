"""One tool call as the ledger sees it (``ledger.py``): what it does to which file, or which
command it runs, read from its name and input by the rules (``ledger_rules.py``), without a
model. Pure functions of the call: the same call, the same ``Call``.

Shell commands are read for the files they plainly write: a redirect (``> f``, ``>> f``),
``tee f``, ``sed -i ... f``, ``rm f``, a Codex ``apply_patch`` given through the shell, and
SWE-agent's own commands (``open f``, ``create f``, ``edit N:M``); and for the files they
plainly read (``cat f``, ``sed -n 'a,bp' f``, ``head``, ``tail``, ``nl``, ``less``:
``shell_reads.py``). A relative path after a leading ``cd DIR &&`` is under ``DIR``; a path
that needed escaping to be said is not named. Anything else a command does is only "the
command ran".

An edit call that states its exact replacements keeps them (``replacements``), and a write
keeps the content it wrote when it is small enough, so the ledger can compute the hash of
a file after an edit when it knows the content the edit applied to (``applied``).
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import shell_reads
from .ledger_rules import LedgerRules
from .outcomes import clip

MAX_COMMAND = 300


def digest(text: str) -> str:
    """The content hash the ledger shows: ``sha256:`` and 12 hex digits."""
    data = text.encode("utf-8", "surrogatepass")
    return "sha256:" + hashlib.sha256(data).hexdigest()[:12]


Replacement = tuple[str, str, bool]
"""One exact replacement an edit tool states: old text, new text, every occurrence or one."""


@dataclass(frozen=True)
class Call:
    """``kind``: ``read``, ``write`` (whole content: ``sha`` is its hash, ``text`` the content
    when it is at most ``MAX_KNOWN_CHARS``), ``edit`` (``edits``: its exact replacements, in
    order, when the tool states them), ``delete``, ``patch`` (``paths`` the files a patch
    names), ``shell``, ``open`` (SWE-agent opens a file, which later edits without a path
    change). ``lines``: the span a read asked for, ``(first, last)`` with ``last`` None for
    "to the end", or ``(-n, None)`` for the last ``n`` lines."""

    kind: str
    paths: tuple[str, ...] = ()
    command: str | None = None
    sha: str | None = None
    lines: tuple[int, int | None] | None = None
    text: str | None = None
    edits: tuple[Replacement, ...] | None = None

    def as_json(self) -> list[object]:
        lines = list(self.lines) if self.lines is not None else None
        edits = [list(e) for e in self.edits] if self.edits is not None else None
        return [self.kind, list(self.paths), self.command, self.sha, lines, self.text, edits]

    @staticmethod
    def from_json(raw: list[Any]) -> Call:
        """The call ``as_json`` wrote (a checkpoint from before ``text`` and ``edits`` has
        five fields)."""
        kind, paths, command, sha, lines = raw[:5]
        text, edits = (raw[5], raw[6]) if len(raw) > 5 else (None, None)
        span = (int(lines[0]), None if lines[1] is None else int(lines[1])) if lines else None
        changes = tuple((str(a), str(b), bool(c)) for a, b, c in edits) if edits else None
        return Call(str(kind), tuple(str(p) for p in paths), command, sha, span, text, changes)


MAX_KNOWN_CHARS = 100_000
"""A written content longer than this is hashed, not kept: edits to it have no hash."""
_UNSURE = ("\t", "\r")
"""Text editor tools expand tabs; a tool that reads text with universal newlines writes
``\r\n`` back as ``\n``: with either, the content after an edit is not certain."""


def replacements(inputs: Mapping[str, object]) -> tuple[Replacement, ...] | None:
    """The exact replacements an edit call states (``old_string``/``new_string``, ``old_str``
    /``new_str``, ``old_text``/``new_text``, ``replace_all``; a list of them under ``edits``),
    or None when it states none the ledger can apply exactly (an empty old text, a tab or a
    carriage return: ``_UNSURE``)."""
    given = inputs.get("edits")
    items = given if isinstance(given, list) else [inputs]
    out: list[Replacement] = []
    for item in items:
        if not isinstance(item, dict):
            return None
        old = _first(item, ("old_string", "old_str", "old_text"))
        new = _first(item, ("new_string", "new_str", "new_text"))
        every = item.get("replace_all", False)
        if not isinstance(old, str) or not isinstance(new, str) or not isinstance(every, bool):
            return None
        if not old or any(c in old or c in new for c in _UNSURE):
            return None
        out.append((old, new, every))
    return tuple(out) or None


def applied(content: str, edits: tuple[Replacement, ...]) -> str | None:
    """``content`` after ``edits`` as the edit tools apply them, or None when that is not
    certain: an old text found no time, or more than once for a single replacement (the
    tools refuse or pick one), or a tab or a carriage return in the content."""
    if any(c in content for c in _UNSURE):
        return None
    for old, new, every in edits:
        found = content.count(old)
        if found == 0 or (found > 1 and not every):
            return None
        content = content.replace(old, new) if every else content.replace(old, new, 1)
    return content


def _first(inputs: Mapping[str, object], keys: tuple[str, ...]) -> object:
    for key in keys:
        if key in inputs:
            return inputs[key]
    return None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _span(start: object, count: object) -> tuple[int, int | None] | None:
    first, many = _int(start), _int(count)
    if first is None and many is None:
        return None
    first = max(1, first or 1)
    return first, first + many - 1 if many is not None and many > 0 else None


def command_text(value: object) -> str | None:
    """A command as one string: Codex passes ``["bash", "-lc", "cmd"]``."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        if len(value) == 3 and value[1] in ("-lc", "-c") and value[0].endswith("sh"):
            return str(value[2])
        return shlex.join(value)
    return None


def read_call(name: str, inputs: object, rules: LedgerRules, current: str | None) -> Call | None:
    """What the call ``name(inputs)`` does, or None when the ledger does not follow it;
    ``current`` is the file SWE-agent has open (edits without a path are to it)."""
    kind = rules.kind(name)
    if kind is None or not isinstance(inputs, dict):
        return None
    path = _first(inputs, rules.path_keys)
    path = path if isinstance(path, str) and path else None
    if kind == "editor":
        return _editor(inputs, path, rules)
    if kind == "shell":
        text = command_text(_first(inputs, rules.command_keys))
        if text is None and isinstance(inputs.get("action"), dict):
            text = command_text(inputs["action"].get("command"))
        return _shell(text, current) if text is not None else None
    if kind == "patch":
        patch = _first(inputs, ("input", "patch", *rules.content_keys))
        return Call("patch", patched(patch) if isinstance(patch, str) else ())
    if kind == "read":
        if name == "open" and path is not None:
            return Call("open", (path,), lines=_span(inputs.get("line_number"), None))
        span = _span(inputs.get("offset"), inputs.get("limit"))
        return Call("read", (path,), lines=span) if path else None
    if kind == "write":
        content = _first(inputs, rules.content_keys)
        return _write(path, content) if path else None
    target = path or current
    return Call("edit", (target,), edits=replacements(inputs)) if target else None


def _write(path: str, content: object) -> Call:
    if not isinstance(content, str):
        return Call("write", (path,))
    kept = content if len(content) <= MAX_KNOWN_CHARS else None
    return Call("write", (path,), sha=digest(content), text=kept)


def _editor(inputs: Mapping[str, object], path: str | None, rules: LedgerRules) -> Call | None:
    if path is None:
        return None
    command = inputs.get("command")
    if command == "view":
        span = inputs.get("view_range")
        lines = None
        if isinstance(span, list) and len(span) == 2:
            first, last = _int(span[0]), _int(span[1])
            if first is not None:
                lines = (first, last if last is not None and last > 0 else None)
        return Call("read", (path,), lines=lines)
    if command == "create":
        return _write(path, _first(inputs, rules.content_keys))
    return Call("edit", (path,), edits=replacements(inputs) if command == "str_replace" else None)


_PATCH_FILE = re.compile(
    r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.M
)


def patched(patch: str) -> tuple[str, ...]:
    """The files a Codex patch (``*** Begin Patch``) adds, updates, deletes or moves to."""
    found = [a or b for a, b in _PATCH_FILE.findall(patch)]
    return tuple(dict.fromkeys(found))


_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")", ";;"})


def _shell(text: str, current: str | None) -> Call:
    command = clip(text, MAX_COMMAND)
    stripped = text.strip()
    if "*** Begin Patch" in stripped and stripped.split(None, 1)[0].endswith("apply_patch"):
        return Call("patch", patched(stripped), command=command)
    swe = _swe_agent(stripped, current)
    if swe is not None:
        return Call(swe[0], swe[1], command=command)
    seen = shell_reads.reads(stripped)
    if seen is not None:
        return Call("read", seen[0], command=command, lines=seen[1])
    written = _written(stripped.split("\n", 1)[0])
    return Call("shell", written, command=command)


_SWE_OPEN = re.compile(r"^(open|create)\s+\"?([^\s\"]+)\"?(?:\s+(\d+))?\s*$")
_SWE_EDIT = re.compile(r"^edit\s+\d+:\d+\s*\n")


def _swe_agent(text: str, current: str | None) -> tuple[str, tuple[str, ...]] | None:
    found = _SWE_OPEN.match(text)
    if found:
        return ("open" if found[1] == "open" else "write"), (found[2],)
    if _SWE_EDIT.match(text) and current is not None:
        return "edit", (current,)
    return None


def _written(line: str) -> tuple[str, ...]:
    """The files the first line of a shell command plainly writes (see the docstring)."""
    words = shell_reads.words(line)
    if not words:
        return ()
    out: list[str] = []
    segment: list[str] = []
    for word in [*words, ";"]:
        if word in _SEPARATORS:
            out += _segment(segment)
            segment = []
        else:
            segment.append(word)
    # Only paths said as they are (one that needed escaping is not named), relative ones
    # under the absolute directory a leading ``cd DIR &&`` names.
    where = words[1] if words[:1] == ["cd"] and words[2:3] == ["&&"] else ""
    where = where if where.startswith("/") and where in line else ""
    kept = (p for p in out if p and p != "/dev/null" and not p.startswith("&") and p in line)
    return tuple(dict.fromkeys(posixpath.join(where, p) if where else p for p in kept))


def _segment(words: list[str]) -> list[str]:
    found: list[str] = []
    for at, word in enumerate(words):
        if word in (">", ">>") and at + 1 < len(words) and (at == 0 or words[at - 1] != "2"):
            found.append(words[at + 1])
    if not words:
        return found
    program = words[0].rsplit("/", 1)[-1]
    rest = [w for w in words[1:] if w not in (">", ">>")]
    plain = [w for w in rest if not w.startswith("-")]
    if program == "tee":
        found += plain
    elif program in ("sed", "perl") and any(w.startswith("-i") or w == "-pi" for w in rest):
        scripts = {rest[i + 1] for i, w in enumerate(rest[:-1]) if w == "-e"}
        found += [w for w in plain if w not in scripts] if scripts else plain[1:]
    elif program == "rm":
        found += plain
    return found


__all__ = [
    "MAX_COMMAND",
    "MAX_KNOWN_CHARS",
    "Call",
    "Replacement",
    "applied",
    "command_text",
    "digest",
    "patched",
    "read_call",
    "replacements",
]
