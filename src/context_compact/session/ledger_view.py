"""The ledger as text: the compact rendering every summary message carries (``render``) and
the full one ``inspect`` prints (``full``).

``render`` is a deterministic function of the ledger and a budget (no clock, no counter that
moves between calls): the same ledger gives the same bytes, so a summary message made from it
stays byte-identical until the next summary. It fits ``chars`` characters: the last test run
comes first (its failing names are bounded already), then the files changed, newest first,
then the open errors, newest first (a directory all changed files are under is said once,
before them); what does not fit is counted ("... and N more"), never
cut mid-line. Every value a tool supplied (a path, a command, an error line) is on one line
of its own and clipped (``outcomes.clip``), and the caller quotes the whole text with a
boundary no value can close (``markers.session_summary``).
"""

from __future__ import annotations

import posixpath
from typing import Any

from .ledger import Ledger
from .outcomes import clip

CHARS_PER_TOKEN = 4
PATH_CHARS = 160
COMMAND_CHARS = 120
MIN_BASE = 12
"""A directory shorter than this is not factored out of the paths under it."""


def _file(path: str, entry: list[Any], base: str = "") -> str:
    seq, op, sha, changes = entry
    more = f" x{changes}" if changes > 1 else ""
    hashed = f", {sha}" if sha else ""
    shown = path[len(base) + 1 :] if base else path
    return f"- {clip(shown, PATH_CHARS)} ({op}{more}, msg {seq}{hashed})"


def common_base(paths: list[str]) -> str:
    """The directory every path of ``paths`` is under, when there are several, all absolute,
    and it is long enough to be worth saying once; "" otherwise."""
    if len(paths) < 2 or not all(p.startswith("/") for p in paths):
        return ""
    try:
        base = posixpath.commonpath(paths)
    except ValueError:
        return ""
    if len(base) < MIN_BASE or any(p == base for p in paths) or "\n" in base:
        return ""
    return base


def test_line(test: list[Any] | None) -> str | None:
    """The last test run in one line, or None when no test ran."""
    if test is None:
        return None
    seq, command, runner, passed, failed, failing, status = test
    where = f"msg {seq}, `{clip(command, COMMAND_CHARS)}`"
    if runner is None:
        said = f"exit status {status}" if status is not None else "no summary read"
        return f"Last test run ({where}): {said}"
    verdict = "FAILED" if failed else "passed"
    names = f"; failing: {', '.join(failing)}" if failing else ""
    return f"Last test run ({where}, {runner}): {verdict}: {failed} failed, {passed} passed{names}"


test_line.__test__ = False  # type: ignore[attr-defined]  # a renderer, not a test


def _error(entry: list[Any]) -> str:
    seq, what, line = entry
    return f"- msg {seq}, {clip(what, COMMAND_CHARS)}: {line}"


_MORE = "- ... and {count} more (the full ledger: inspect)"


def render(ledger: Ledger, chars: int) -> str:
    """The compact rendering, at most ``chars`` characters ("" for an empty ledger)."""
    if not ledger:
        return ""
    room = chars
    out: list[str] = []

    def fits(line: str, keep: int = 0) -> bool:
        nonlocal room
        if len(line) + 1 + keep > room:
            return False
        room -= len(line) + 1
        return True

    test = test_line(ledger.test)
    test_part = [test] if test is not None and fits(test) else []
    changed = list(ledger.changed.items())
    files: list[str] = []
    base = common_base([path for path, _ in changed])
    under = f"; paths under {clip(base, PATH_CHARS)}/" if base else ""
    head = f"Files changed ({len(changed)}, newest first{under}; xN: N changes):" if changed else ""
    # Room is kept for the line that counts the files left out.
    more = len(_MORE.format(count=len(changed))) + 1
    if head and fits(head, more):
        for at, (path, entry) in enumerate(reversed(changed)):
            if not fits(_file(path, entry, base), 0 if at == len(changed) - 1 else more):
                break
            files.append(_file(path, entry, base))
        left = len(changed) - len(files)
        if left:
            files.append(_MORE.format(count=left))
            room -= len(files[-1]) + 1
        out += [head, *files]
    out += test_part
    errors = ledger.errors
    if errors:
        head = f"Open errors ({len(errors)}, newest first):"
        shown: list[str] = []
        # The heading only with the newest error under it.
        if fits(head, len(_error(errors[-1])) + 1):
            for entry in reversed(errors):
                line = _error(entry)
                if not fits(line):
                    break
                shown.append(line)
            out += [head, *shown]
    if ledger.commands:
        seq, command, status, _ = ledger.commands[-1]
        ended = f", exit status {status}" if status is not None else ""
        line = (
            f"Commands run: {ledger.commands_run}; the last (msg {seq}): "
            f"`{clip(command, COMMAND_CHARS)}`{ended}"
        )
        if fits(line):
            out.append(line)
    return "\n".join(out)


def full(ledger: Ledger, detail: bool = False) -> str:
    """Every file changed, the last test run and the open errors, for ``inspect``; with
    ``detail`` also every file read and the commands kept (else their counts)."""
    lines = [f"files changed: {len(ledger.changed)}"]
    lines += [_file(path, entry) for path, entry in ledger.changed.items()]
    lines.append(f"files read: {len(ledger.read)}")
    for path, (seq, sha, ranges, reads) in ledger.read.items() if detail else ():
        spans = ", ".join(
            "whole" if r is None else f"{r[0]}-{'' if r[1] is None else r[1]}" for r in ranges
        )
        lines.append(
            f"- {clip(path, PATH_CHARS)} ({reads} read(s), msg {seq}, {sha}, lines {spans})"
        )
    lines.append(test_line(ledger.test) or "Last test run: none")
    lines.append(f"commands run: {ledger.commands_run}")
    for seq, command, status, error in ledger.commands if detail else ledger.commands[-1:]:
        ended = f" exit {status}" if status is not None else ""
        said = f": {error}" if error else ""
        lines.append(f"- msg {seq}{ended}: `{clip(command, COMMAND_CHARS)}`{said}")
    lines.append(f"open errors: {len(ledger.errors)}")
    lines += [_error(entry) for entry in ledger.errors]
    return "\n".join(lines)


def as_dict(ledger: Ledger) -> dict[str, Any]:
    """The ledger for ``inspect --json`` and exports: named fields, newest last."""
    test = ledger.test
    return {
        "files_changed": [
            {"path": p, "message": e[0], "op": e[1], "sha": e[2], "changes": e[3]}
            for p, e in ledger.changed.items()
        ],
        "files_read": [
            {"path": p, "message": e[0], "sha": e[1], "lines": e[2], "reads": e[3]}
            for p, e in ledger.read.items()
        ],
        "commands_run": ledger.commands_run,
        "commands": [
            {"message": c[0], "command": c[1], "exit": c[2], "error": c[3]} for c in ledger.commands
        ],
        "test_runs": ledger.test_runs,
        "last_test": None
        if test is None
        else {
            "message": test[0],
            "command": test[1],
            "runner": test[2],
            "passed": test[3],
            "failed": test[4],
            "failing": test[5],
            "exit": test[6],
        },
        "open_errors": [{"message": e[0], "what": e[1], "line": e[2]} for e in ledger.errors],
    }


__all__ = ["CHARS_PER_TOKEN", "as_dict", "full", "render", "test_line"]
