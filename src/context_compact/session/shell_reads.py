"""Shell commands that plainly read files, for the ledger (``calls.py``): ``cat F``,
``sed -n 'a,bp' F``, ``head -n N F``, ``tail -n N F``, ``nl F``, ``less F``, ``more F``,
run through a shell tool, are file reads, with the line range when the command states one.

Conservative on purpose: only a command of one reader over files, optionally after
``cd DIR &&`` and optionally piped into one line selector (``| head -n N``, ``| tail -n N``,
``| sed -n 'a,bp'``) after ``cat`` or ``nl``, which picks lines without changing them. Any
other pipe, separator, redirect of the output, unknown option or here-document makes the
command not a read (it is still "a command ran"). Stderr may be redirected (``2>&1``,
``2>/dev/null``).

Invariants: a pure function of the command's text; it never raises; every path it returns
is written in the command as it is (a path that needed quoting or escaping to be said is
not returned), or is the ``cd`` directory and such a path joined.
"""

from __future__ import annotations

import posixpath
import re
import shlex

Span = tuple[int, int | None]
"""Lines ``(first, last)``, ``last`` None for "to the end"; ``(-n, None)``: the last ``n``."""

_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")", ";;", "|&"})
_SED_RANGE = re.compile(r"^(\d+)(?:,(\d+|\$))?p$")
_COUNT = re.compile(r"^-(\d+)$")
# Options that change nothing of which lines are shown.
_CAT_FLAGS = frozenset({"-n", "-b", "-A", "-e", "-E", "-s", "-T", "-v", "-t"})
_NL_FLAGS = frozenset({"-ba", "-bt", "-nln", "-nrn", "-nrz"})
_PAGER_FLAGS = frozenset({"-N", "-R", "-S", "-X"})


def words(line: str) -> list[str] | None:
    """A shell line's words and operators as a POSIX shell splits them; None when its
    quoting does not close."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:
        return None


def _segments(words: list[str]) -> tuple[list[list[str]], list[str]] | None:
    """The words between separators, and the separators; stderr redirects dropped, None
    for any other redirect."""
    segments: list[list[str]] = [[]]
    separators: list[str] = []
    at = 0
    while at < len(words):
        word = words[at]
        if word in _SEPARATORS:
            separators.append(word)
            segments.append([])
        elif set(word) <= set("<>&|"):
            # Only stderr's: ``2>&1`` comes as "2", ">&", "1"; ``2>/dev/null`` as "2", ">",
            # "/dev/null".
            segment = segments[-1]
            target = words[at + 1] if at + 1 < len(words) else ""
            stderr = bool(segment) and segment[-1] == "2"
            if not stderr or (word, target) not in ((">&", "1"), (">", "/dev/null")):
                return None
            segment.pop()
            at += 1
        else:
            segments[-1].append(word)
        at += 1
    return segments, separators


def _count(words: list[str], default: int) -> tuple[int | str, list[str]] | None:
    """``head``/``tail``'s line count (an int, or ``"+K"`` for tail from line K) and the
    remaining words, or None for an option it does not know."""
    count: int | str = default
    rest: list[str] = []
    at = 0
    while at < len(words):
        word = words[at]
        if word in ("-n", "--lines") and at + 1 < len(words):
            value, at = words[at + 1], at + 1
        elif word.startswith("--lines="):
            value = word[len("--lines=") :]
        elif word.startswith("-n") and len(word) > 2:
            value = word[2:]
        elif _COUNT.match(word):
            value = word[1:]
        elif word.startswith("-"):
            return None
        else:
            rest.append(word)
            at += 1
            continue
        if value.isdigit():
            count = int(value)
        elif value.startswith("+") and value[1:].isdigit():
            count = value
        else:
            return None
        at += 1
    return count, rest


def _head(count: int | str) -> Span | None:
    return (1, count) if isinstance(count, int) and count > 0 else None


def _tail(count: int | str) -> Span | None:
    if isinstance(count, str):
        return (max(1, int(count[1:])), None)
    return (-count, None) if count > 0 else None


def _sed(words: list[str]) -> tuple[Span, list[str]] | None:
    if len(words) < 2 or words[0] != "-n":
        return None
    found = _SED_RANGE.match(words[1])
    if found is None:
        return None
    first = int(found[1])
    last = first if found[2] is None else (None if found[2] == "$" else int(found[2]))
    if first < 1 or (last is not None and last < first):
        return None
    return (first, last), words[2:]


def _reader(words: list[str]) -> tuple[str, Span | None, list[str]] | None:
    """``(program, span, files)`` of one reader segment, or None."""
    program, args = words[0], words[1:]
    if program == "cat" or program in ("less", "more"):
        flags = _CAT_FLAGS if program == "cat" else _PAGER_FLAGS
        files = [w for w in args if not w.startswith("-")]
        if any(w not in flags for w in args if w.startswith("-")):
            return None
        return program, None, files
    if program == "nl":
        files = [w for w in args if not w.startswith("-")]
        if any(w not in _NL_FLAGS for w in args if w.startswith("-")) or len(files) > 1:
            return None
        return program, None, files
    if program in ("head", "tail"):
        counted = _count(args, 10)
        if counted is None:
            return None
        span = _head(counted[0]) if program == "head" else _tail(counted[0])
        return (program, span, counted[1]) if span is not None else None
    if program == "sed":
        # Over several files sed numbers their lines as one stream: one file only.
        ranged = _sed(args)
        return ("sed", ranged[0], ranged[1]) if ranged is not None and len(ranged[1]) < 2 else None
    return None


def reads(text: str) -> tuple[tuple[str, ...], Span | None] | None:
    """The files a shell command plainly reads and the span it shows of each (None: the
    whole file), or None when it is not such a command (see the module docstring)."""
    if "\n" in text.strip() or "<<" in text:
        return None
    said = words(text.strip())
    if not said:
        return None
    split = _segments(said)
    if split is None:
        return None
    segments, separators = split
    where = ""
    if len(segments) > 1 and segments[0][:1] == ["cd"] and separators[0] == "&&":
        if len(segments[0]) != 2 or not segments[0][1].startswith("/"):
            return None
        where = segments[0][1]
        segments, separators = segments[1:], separators[1:]
    if not segments or any(not s for s in segments) or any(s != "|" for s in separators):
        return None
    found = _reader(segments[0])
    if found is None or not found[2] or len(segments) > 2:
        return None
    program, span, files = found
    if len(segments) == 2:
        picked = _selector(segments[1])
        if picked is None or program not in ("cat", "nl") or len(files) != 1:
            return None
        span = picked
    # "-" is stdin; "+N" is a pager's command, not a file.
    if any(f == "-" or f.startswith("+") or f not in text for f in files):
        return None
    if where and where not in text:
        return None
    joined = tuple(posixpath.join(where, f) if where else f for f in files)
    return tuple(dict.fromkeys(joined)), span


def _selector(words: list[str]) -> Span | None:
    """The lines a ``head``/``tail``/``sed -n`` fed by a pipe picks, or None."""
    found = _reader(words)
    if found is None or found[2]:
        return None
    return found[1]


__all__ = ["Span", "reads"]
