"""What a command's output says, read without a model: its exit status, its first error line,
and the summary of a test run (pytest, unittest, jest, vitest, go test, cargo test, mix test).

Each reader is a pure function of the text: it never raises, whatever the text, and its
answer is bounded (``MAX_NAMES`` failing names of at most ``MAX_LINE`` characters each, an
error line of at most ``MAX_LINE``). A text no reader recognizes gives ``None``: the command
ran, nothing more is claimed. Only the last ``TAIL`` characters are searched for a summary
(runners print it at the end), so the work per result is bounded too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

MAX_NAMES = 20
MAX_LINE = 200
TAIL = 20_000
"""Characters at the end of an output searched for a test summary and its failing names."""
HEAD = 20_000
"""Characters at the start of an output searched for its first error line."""
EDGE = 600
"""Characters at each end of an output searched for an exit status."""
TALLY = 4_000
"""Characters at the end of an output searched for a runner's counts (its names, in ``TAIL``,
only once they are found)."""


@dataclass(frozen=True)
class TestSummary:
    """What a test run's own summary said: counts, the failing tests' names, the runner."""

    __test__ = False  # not a test class, whatever pytest's collector thinks of the name

    runner: str
    passed: int
    failed: int
    failing: tuple[str, ...] = ()

    @property
    def status(self) -> str:
        return "failed" if self.failed else "passed"


def clip(text: str, limit: int = MAX_LINE) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis says it was cut)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


_EXIT = re.compile(
    r"(?:exit(?:ed with)? (?:code|status)[: ]*|<returncode>\s*|process exited with code )"
    r"(-?\d{1,4})",
    re.IGNORECASE,
)


def exit_status(text: str, is_error: bool = False) -> int | None:
    """The exit status the output states (``[exit code 2]``, ``Exit code: 1``,
    ``<returncode>0</returncode>``, Codex's ``{"metadata": {"exit_code": 1}}``, OpenHands'
    ``exit code 1``), the last one stated; None when it states none."""
    try:
        head = text.lstrip()[:1]
        if head == "{":
            found = _json_exit(text)
            if found is not None:
                return found
        # Agents state it first (Codex, mini-swe-agent) or last (ours, OpenHands).
        matches = _EXIT.findall(text[-EDGE:]) or _EXIT.findall(text[:EDGE])
        return int(matches[-1]) if matches else None
    except (ValueError, RecursionError):
        return None


def _json_exit(text: str) -> int | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    meta = data.get("metadata") if isinstance(data, dict) else None
    code = meta.get("exit_code") if isinstance(meta, dict) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def output_text(text: str) -> str:
    """The output a Codex JSON result wraps (``{"output": ..., "metadata": ...}``), or
    ``text`` itself."""
    if not text.lstrip().startswith("{"):
        return text
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return text
    inner = data.get("output") if isinstance(data, dict) else None
    return inner if isinstance(inner, str) else text


_ERROR_WORDS = (
    "error",
    "exception",
    "traceback",
    "fatal",
    "panic",
    "failed",
    "failure",
    "not found",
    "no such file",
    "permission denied",
    "cannot",
    "could not",
    "unable to",
)


def first_error(text: str) -> str | None:
    """The first line of the output that reads as an error, clipped; None when none does."""
    head = text[:HEAD]
    # Found in the lower-cased text (one pass a word, in C), then mapped back by line: casing
    # may change a text's length, never its line breaks.
    lowered = head.lower()
    found = [at for at in (lowered.find(word) for word in _ERROR_WORDS) if at >= 0]
    if not found:
        return None
    first, seen = min(found), 0
    for index, line in enumerate(lowered.splitlines(keepends=True)):
        seen += len(line)
        if seen > first:
            return clip(head.splitlines()[index])
    return None


# -- test summaries ---------------------------------------------------------------------
_PYTEST_TALLY = re.compile(
    r"^[=\s]*((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)"
    r"(?:, )?)+) in [\d.]+s",
    re.MULTILINE,
)
_PYTEST_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+::\S+|\S+\.py)", re.MULTILINE)
_UNITTEST_RAN = re.compile(
    r"^Ran (\d+) tests? in [\d.]+s\s*\n+\s*(OK|FAILED)(?: \(([^)\n]*)\))?", re.MULTILINE
)
_UNITTEST_FAILED = re.compile(r"^(?:FAIL|ERROR): (\S+) \(([^)\n]+)\)", re.MULTILINE)
_JEST_TALLY = re.compile(r"^Tests:\s+(.*\d+ total)\s*$", re.MULTILINE)
_JEST_FAILED = re.compile(r"^\s*\u25cf (.+?)\s*$", re.MULTILINE)
_VITEST_TALLY = re.compile(r"^\s*Tests\s+((?:\d+ \w+(?: \| )?)+)\s*\(\d+\)\s*$", re.MULTILINE)
_VITEST_FAILED = re.compile(r"^\s*(?:FAIL|\u00d7|\u2717)\s+(.+?)\s*$", re.MULTILINE)
_GO_CASE = re.compile(r"^\s*--- (PASS|FAIL): (\S+)", re.MULTILINE)
_GO_PACKAGE = re.compile(r"^(ok|FAIL)\s+\S+\s+(?:[\d.]+s|\(cached\))", re.MULTILINE)
_CARGO_TALLY = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed;", re.MULTILINE)
_CARGO_FAILED = re.compile(r"^test (\S+) \.\.\. FAILED\s*$", re.MULTILINE)
_EXUNIT_TALLY = re.compile(
    r"^(?:\d+ doctests?, )?(?:\d+ propert(?:y|ies), )?(\d+) tests?, (\d+) failures?", re.M
)
_EXUNIT_FAILED = re.compile(r"^\s+\d+\) test (.+?) \(([\w.]+)\)\s*$", re.MULTILINE)
_COUNT = re.compile(r"(\d+) (\w+)")


def _names(pattern: re.Pattern[str], text: str) -> tuple[str, ...]:
    found = [clip(m if isinstance(m, str) else m[0]) for m in pattern.findall(text)]
    return tuple(dict.fromkeys(found))[:MAX_NAMES]


def _tally(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for number, word in _COUNT.findall(text):
        counts[word] = counts.get(word, 0) + int(number)
    return counts


def _pytest(text: str) -> TestSummary | None:
    tallies = _PYTEST_TALLY.findall(text)
    if not tallies:
        return None
    counts = _tally(tallies[-1])
    failed = counts.get("failed", 0) + counts.get("error", 0) + counts.get("errors", 0)
    return TestSummary("pytest", counts.get("passed", 0), failed, _names(_PYTEST_FAILED, text))


def _unittest(text: str) -> TestSummary | None:
    runs = _UNITTEST_RAN.findall(text)
    if not runs:
        return None
    ran, verdict, detail = runs[-1]
    counts = _tally(detail.replace("=", " ").replace(",", " ")) if detail else {}
    # ``failures=1, errors=2`` reads as word then number: count them that way round.
    pairs = re.findall(r"(\w+)=(\d+)", detail or "")
    counts = {word: int(number) for word, number in pairs} or counts
    failed = counts.get("failures", 0) + counts.get("errors", 0)
    if verdict == "FAILED" and not failed:
        failed = 1
    skipped = counts.get("skipped", 0) + counts.get("expected failures", 0)
    names = tuple(
        dict.fromkeys(clip(f"{cls}.{name}") for name, cls in _UNITTEST_FAILED.findall(text))
    )[:MAX_NAMES]
    return TestSummary("unittest", max(0, int(ran) - failed - skipped), failed, names)


def _jest(text: str) -> TestSummary | None:
    tallies = _JEST_TALLY.findall(text)
    if not tallies:
        return None
    counts = _tally(tallies[-1])
    return TestSummary(
        "jest", counts.get("passed", 0), counts.get("failed", 0), _names(_JEST_FAILED, text)
    )


def _vitest(text: str) -> TestSummary | None:
    tallies = _VITEST_TALLY.findall(text)
    if not tallies:
        return None
    counts = _tally(tallies[-1])
    names = _names(_VITEST_FAILED, text) if counts.get("failed") else ()
    return TestSummary("vitest", counts.get("passed", 0), counts.get("failed", 0), names)


def _go(text: str) -> TestSummary | None:
    cases = _GO_CASE.findall(text)
    packages = _GO_PACKAGE.findall(text)
    if not cases and not packages:
        return None
    if cases:
        passed = sum(1 for verdict, _ in cases if verdict == "PASS")
        failing = [clip(name) for verdict, name in cases if verdict == "FAIL"]
        return TestSummary(
            "go test", passed, len(failing), tuple(dict.fromkeys(failing))[:MAX_NAMES]
        )
    passed = sum(1 for verdict in packages if verdict == "ok")
    return TestSummary("go test", passed, len(packages) - passed)


def _cargo(text: str) -> TestSummary | None:
    tallies = _CARGO_TALLY.findall(text)
    if not tallies:
        return None
    passed = sum(int(p) for p, _ in tallies)
    failed = sum(int(f) for _, f in tallies)
    return TestSummary("cargo test", passed, failed, _names(_CARGO_FAILED, text))


def _exunit(text: str) -> TestSummary | None:
    tallies = _EXUNIT_TALLY.findall(text)
    if not tallies:
        return None
    ran, failed = (int(n) for n in tallies[-1])
    names = tuple(
        dict.fromkeys(clip(f"{module}: {name}") for name, module in _EXUNIT_FAILED.findall(text))
    )[:MAX_NAMES]
    return TestSummary("mix test", max(0, ran - failed), failed, names)


# Each reader, and a word its runner's counts always hold: a reader whose word is not in the
# end of the output is not run.
_READERS = (
    (_pytest, " in "),
    (_cargo, "test result:"),
    (_go, "\t"),
    (_jest, "Tests:"),
    (_vitest, "Tests "),
    (_unittest, "Ran "),
    (_exunit, " test"),
)


def test_summary(text: str) -> TestSummary | None:
    """The summary of the test run ``text`` is the output of, or None when no runner's
    summary is in it. Readers are tried in a fixed order (pytest, cargo, go, jest,
    vitest, unittest, mix): the first that finds its runner's summary answers."""
    end = text[-TALLY:]
    try:
        for reader, word in _READERS:
            if word in end and reader(end) is not None:
                return reader(text[-TAIL:])
    except (ValueError, RecursionError):
        return None
    return None


test_summary.__test__ = False  # type: ignore[attr-defined]  # a reader, not a test

__all__ = [
    "MAX_LINE",
    "MAX_NAMES",
    "TestSummary",
    "clip",
    "exit_status",
    "first_error",
    "output_text",
    "test_summary",
]
