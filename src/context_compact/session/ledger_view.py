"""The ledger as text: the compact rendering every summary message carries (``render``) and
the full one ``inspect`` prints and each summary saves as a file (``full``).

``render`` is a deterministic function of the ledger, a budget in tokens and the name of the
file holding the full ledger (no clock, no counter that moves between calls): the same
ledger gives the same bytes, so a summary message made from it stays byte-identical until
the next summary. Its size is the offline estimate (``sizing.estimate.text_tokens``, a
function of the text alone), at most ``tokens``. The last test run comes first (its failing
names are bounded already), then the files changed, then the open errors, newest first, then
the last command; what does not fit is counted ("... and N more"), never cut mid-line.

The files changed are grouped by directory (a directory all of them are under is said
once, in the heading), the directory of the newest change first, each file as its name and a
short code: how it changed (``w`` written, ``e`` edited, ``p`` patched, ``c`` by a command),
how many times when more than once, ``@`` the message of the last change and ``#`` the start
of its content's sha256 when the ledger knows it. Names come before codes: as many files as
fit are named, the newest first, and the newest of those carry their codes as far as the
room left allows. A count of the files left out names the file that holds them all.

Every value a tool supplied (a path, a command, an error line) is clipped to one line
(``outcomes.clip``): it can neither start a line of its own nor be cut across two, and the
caller quotes the whole text with a boundary no value can close (``markers.session_summary``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from typing import Any

from ..sizing.estimate import text_tokens
from .ledger import Ledger
from .outcomes import clip

CHARS_PER_TOKEN = 4
PATH_CHARS = 160
COMMAND_CHARS = 120
HASH_HEX = 8
"""Hex digits of a content hash the rendering shows (the full ledger has 12)."""
MIN_BASE = 12
"""A directory shorter than this is not factored out of the paths under it."""
CODES = {"written": "w", "edited": "e", "patched": "p", "by a command": "c"}
LEGEND = (
    "; after a name: w written, e edited, p patched, c by a command, N times, @message, #sha256"
)


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


def code(entry: list[Any]) -> str:
    """A file's change as the rendering shows it after its name: ``e3@41#1a2b3c4d``."""
    seq, op, sha, changes = entry
    times = str(changes) if changes > 1 else ""
    hashed = f"#{str(sha).rsplit(':', 1)[-1][:HASH_HEX]}" if sha else ""
    return f"{CODES.get(op, 'c')}{times}@{seq}{hashed}"


def _cost(lines: list[str]) -> int:
    """Tokens of ``lines`` as one text: the estimate of each line and its newline, which is
    never less than the estimate of the lines joined."""
    return sum(text_tokens(line + "\n") for line in lines)


def _fit(most: int, cost: Callable[[int], int], room: int) -> int:
    """The largest ``n <= most`` whose ``cost(n)`` is within ``room`` (0 if none is), for a
    cost that grows with ``n``."""
    low, high = 0, most
    while low < high:
        mid = (low + high + 1) // 2
        if cost(mid) <= room:
            low = mid
        else:
            high = mid - 1
    return low


def _files(ledger: Ledger, room: int, saved: str | None) -> list[str]:
    """The files changed, grouped by directory, in at most ``room`` tokens ([] if even the
    heading and one file do not fit)."""
    changed = list(reversed(ledger.changed.items()))  # newest first
    if not changed:
        return []
    base = common_base([path for path, _ in changed])
    under = f", under {clip(base, PATH_CHARS)}/" if base else ""
    head = f"Files changed ({len(changed)}, newest first, by directory{under}"
    where = f"all in {saved}" if saved else "the full ledger: inspect"
    split = []
    for path, entry in changed:
        shown = path[len(base) + 1 :] if base else path
        folder, name = posixpath.split(shown)
        split.append((clip(folder + "/" if folder else "./", PATH_CHARS), clip(name), entry))

    def lines(named: int, coded: int) -> list[str]:
        groups: dict[str, list[str]] = {}
        for at, (folder, name, entry) in enumerate(split[:named]):
            groups.setdefault(folder, []).append(f"{name} {code(entry)}" if at < coded else name)
        said = f"{head}{LEGEND if coded else ''}):"
        out = [said, *(f"- {folder} {', '.join(names)}" for folder, names in groups.items())]
        left = len(changed) - named
        return [*out, f"- ... and {left} more ({where})"] if left else out

    named = _fit(len(changed), lambda n: _cost(lines(n, 0)), room)
    if named == 0:
        return []
    coded = _fit(named, lambda n: _cost(lines(named, n)), room)
    return lines(named, coded)


def render(ledger: Ledger, tokens: int, saved: str | None = None) -> str:
    """The compact rendering, at most ``tokens`` tokens by the offline estimate ("" for an
    empty ledger); ``saved`` is the file holding the full ledger, named for what is left
    out."""
    if not ledger:
        return ""
    room = tokens
    test = test_line(ledger.test)
    test_part = [test] if test is not None and _cost([test]) <= room else []
    room -= _cost(test_part)
    files = _files(ledger, room, saved)
    room -= _cost(files)
    out = [*files, *test_part]
    errors = ledger.errors
    if errors:
        shown = [f"Open errors ({len(errors)}, newest first):"]
        for entry in reversed(errors):
            if _cost([*shown, _error(entry)]) > room:
                break
            shown.append(_error(entry))
        # The heading only with the newest error under it.
        if len(shown) > 1:
            out += shown
            room -= _cost(shown)
    if ledger.commands:
        seq, command, status, _ = ledger.commands[-1]
        ended = f", exit status {status}" if status is not None else ""
        line = (
            f"Commands run: {ledger.commands_run}; the last (msg {seq}): "
            f"`{clip(command, COMMAND_CHARS)}`{ended}"
        )
        if _cost([line]) <= room:
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


__all__ = ["CHARS_PER_TOKEN", "as_dict", "code", "full", "render", "test_line"]
