"""Regenerate (or check) the command outputs shown in README.md and docs/*.md, so they cannot drift.

    python scripts/readme_outputs.py            # rewrite the marked blocks of every page
    python scripts/readme_outputs.py --check    # exit 1, with a diff, if any block is stale
    python scripts/readme_outputs.py --readme FILE   # one page only

A block is marked in a page (the README, or any page of ``docs/``) as::

    <!-- output: NAME -->
    ```text
    ...what the script writes...
    ```
    <!-- /output -->

and ``NAME`` is one of ``RECIPES`` below: the commands a reader would type (shown after
``$``), run here for real in a fixed work directory (below), through the installed CLI
(in-process, ``context_compact.cli.main``), with ``COLUMNS=80`` and no model settings in the
environment. The Codex example reads the trajectory pack's rollout
(``tests/data/trajectories`` in the repository, or ``--pack DIR``).

Runs are made reproducible, not edited: the token counts are estimated by character class
(``sizing.py``: a digit weighs more than a letter), so a random session id or temporary path
in a view moves them by a token here and there. Each recipe therefore runs in a fixed
directory (``/tmp/context-compact-readme/<recipe>``, emptied before and after; a lock file
keeps two runs apart) and with ``uuid.uuid4`` drawn from a generator seeded by the
recipe's name (``SEEDS``; session ids, and the seed's transcript names, are uuid4 digits).
The one thing still rewritten is the ``started`` column of ``sessions`` (the clock),
shown as ``MM-DD hh:mm``.
Where a block shows part of an output (``| head``, ``| tail``, or the later events of one
kind folded into one ``...`` line naming their turns), the rule is in the recipe and the
shown command, the ``...`` line or the README's text around the block says so.
"""

from __future__ import annotations

import argparse
import difflib
import fcntl
import json
import os
import random
import re
import shutil
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from click.testing import CliRunner

from context_compact.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def pages() -> list[Path]:
    """The pages whose output blocks are kept: the README, then docs/*.md by name."""
    return [README, *sorted(DOCS.glob("*.md"))]

PACK = ROOT / "tests" / "data" / "trajectories"
ROLLOUT = (
    "codex/AcidicSoil-codex-session-view/"
    "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
)
COLUMNS = "80"
BASE = Path("/tmp/context-compact-readme")
SETTINGS = (
    "MODEL_ID",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "CC_STORE_URL",
)

BLOCK = re.compile(
    r"(?P<open><!-- output: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(?P<close><!-- /output -->)",
    re.DOTALL,
)
STARTED = re.compile(r"^([0-9a-f]{12} {2})\d\d-\d\d \d\d:\d\d", re.MULTILINE)


class Run:
    """One recipe's run: its work directory, and the sessions made in it, in order."""

    def __init__(self, cwd: Path, pack: Path) -> None:
        self.cwd = cwd
        self.pack = pack
        self.ids: list[str] = []
        self.stops: list[Callable[[], None]] = []
        self.requests: list[Any] = []

    def cli(self, *args: str) -> str:
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
        if result.exit_code != 0:
            raise SystemExit(f"context-compact {' '.join(args)} failed:\n{result.output}")
        listed = CliRunner().invoke(main, ["sessions", "--json"])
        if listed.exit_code == 0:
            for row in json.loads(listed.stdout)[::-1]:
                if row["id"] not in self.ids:
                    self.ids.append(row["id"])
        return result.stdout


def normalize(text: str) -> str:
    text = STARTED.sub(r"\1MM-DD hh:mm", text)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


Filter = Callable[[str], str]


def head(n: int) -> Filter:
    return lambda text: "".join(text.splitlines(keepends=True)[:n])


def tail(n: int) -> Filter:
    return lambda text: "".join(text.splitlines(keepends=True)[-n:])


def lines(first: int, last: int) -> Filter:
    """``sed -n FIRST,LASTp``."""
    return lambda text: "".join(text.splitlines(keepends=True)[first - 1 : last])


def head_and_tail(first: int, last: int) -> Filter:
    def cut(text: str) -> str:
        lines = text.splitlines(keepends=True)
        if len(lines) <= first + last:
            return text
        return "".join(lines[:first] + ["...\n"] + lines[-last:])

    return cut


def fold_repeats(kind: str) -> Filter:
    """Keep the first event of ``kind`` whole; fold the later ones into one ``...`` line
    where the second stood (an event: its ``  turn`` line and the indented lines under it)."""

    def fold(text: str) -> str:
        out: list[str] = []
        folded: list[str] = []
        at = -1
        skipping = False
        seen = False
        for line in text.splitlines(keepends=True):
            if line.startswith("  turn "):
                skipping = False
                if line.split()[2] == kind:
                    if seen:
                        folded.append(line.split()[1])
                        skipping = True
                        if at < 0:
                            at = len(out)
                        continue
                    seen = True
            elif skipping and line.startswith("    "):
                continue
            else:
                skipping = False
            out.append(line)
        if folded:
            turns = ", ".join(folded)
            out.insert(at, f"  ...   ({len(folded)} more {kind} like it: turns {turns})\n")
        return "".join(out)

    return fold


@dataclass
class Step:
    """A command as shown (``{0}``, ``{1}``: the ids of the sessions made so far, in order)
    and as run, and what part of its output the block shows."""

    shown: str | None
    args: Callable[[Run], list[str]]
    keep: Filter = field(default=lambda text: text)
    after: Callable[[Run], str] | None = None
    """A comment line the block shows after the output (what the stand-in API received)."""


def nth(run: Run, n: int) -> str:
    return run.ids[n]


def rollout(run: Run) -> str:
    path = run.pack / ROLLOUT
    if not path.is_file():
        raise SystemExit(f"the Codex example needs the trajectory pack: no {path} (--pack DIR)")
    target = run.cwd / path.name
    if not target.exists():
        shutil.copy(path, target)
    return target.name


ANSWER = "The review is done: the two findings above stand; nothing else to change."


def stand_in(run: Run) -> dict[str, str]:
    """A stand-in for the Anthropic API on 127.0.0.1 (the test suite's ``StubAPI``), its one
    reply ``ANSWER`` with about 4 characters a token of the request as its input tokens;
    the environment ``run`` reads to reach it. Stopped when the recipe ends."""
    sys.path.insert(0, str(ROOT / "tests"))
    from stub_api import Reply, StubAPI

    def reply(request: object) -> Reply:
        return Reply(text=ANSWER, input_tokens=len(json.dumps(request)) // 4)

    stub = StubAPI(reply).start()
    run.stops.append(stub.stop)
    run.requests = stub.requests
    return {"MODEL_ID": "claude-test", "ANTHROPIC_BASE_URL": stub.url, "ANTHROPIC_API_KEY": "x"}


def resume(run: Run) -> list[str]:
    os.environ.update(stand_in(run))
    task = "Summarize where the review stands."
    return ["run", "--resume", nth(run, 1), task, "--context-limit", "12500"]


def first_request(run: Run) -> str:
    messages = run.requests[0].body["messages"]
    first = messages[0]["content"]
    text = first if isinstance(first, str) else first[0].get("text", "")
    return (
        f"# the stand-in API got {len(run.requests)} request(s); the first: {len(messages)} "
        f"messages, opening with {json.dumps(text[:48])}...\n"
    )


def sample(relative: str) -> Callable[[Run], list[str]]:
    """``import`` of a public sample kept in ``tests/data`` (``tests/data/SOURCES.md``),
    copied into the work directory under its own name."""

    def args(run: Run) -> list[str]:
        source = ROOT / "tests/data" / relative
        shutil.copy(source, run.cwd / source.name)
        return ["import", source.name]

    return args


RECIPES: dict[str, list[Step]] = {
    "import-samples": [
        Step(
            "context-compact import aider-repo.aider.chat.history.md",
            sample("aider/aider-repo.aider.chat.history.md"),
        ),
        Step(
            "context-compact import tau-bench-gpt-4o-airline-first3.json",
            sample("results_list/tau-bench-gpt-4o-airline-first3.json"),
        ),
        Step(
            "context-compact import goal-review-events.jsonl",
            sample("openhands_v1/goal-review-events.jsonl"),
        ),
    ],
    "demo": [
        Step(
            f"context-compact demo --workdir {BASE}/demo/project",
            lambda run: ["demo", "--workdir", str(run.cwd / "project")],
            head_and_tail(14, 9),
        ),
    ],
    "codex-dry-runs": [
        Step(f"context-compact import {Path(ROLLOUT).name}", lambda run: ["import", rollout(run)]),
        Step(
            "context-compact compact {0} --policy codex --context-limit 12500 --dry-run",
            lambda run: (
                ["compact", nth(run, 0), "--policy", "codex"]
                + ["--context-limit", "12500", "--dry-run"]
            ),
        ),
        Step(
            "context-compact compact {0} --policy default --context-limit 12500 --dry-run",
            lambda run: (
                ["compact", nth(run, 0), "--policy", "default"]
                + ["--context-limit", "12500", "--dry-run"]
            ),
            fold_repeats("persist_new_results"),
        ),
    ],
    "codex-compacted": [
        Step(None, lambda run: ["import", rollout(run)]),  # shown in the block above
        Step(
            "context-compact compact {0} --policy default --context-limit 12500 | tail -1",
            lambda run: (
                ["compact", nth(run, 0), "--policy", "default"] + ["--context-limit", "12500"]
            ),
            tail(1),
        ),
        Step("context-compact sessions", lambda run: ["sessions"]),
        Step(
            "context-compact inspect {1} | head -24",
            lambda run: ["inspect", nth(run, 1)],
            head(24),
        ),
    ],
    "codex-resumed": [
        Step(None, lambda run: ["import", rollout(run)]),
        Step(
            None,
            lambda run: (
                ["compact", nth(run, 0), "--policy", "default"] + ["--context-limit", "12500"]
            ),
        ),
        Step(
            'context-compact run --resume {1} "Summarize where the review stands." '
            "--context-limit 12500",
            resume,
            after=first_request,
        ),
        Step("context-compact sessions | sed -n 4,5p", lambda run: ["sessions"], lines(4, 5)),
    ],
}


# The Codex blocks are one story: the same seed gives the import the same id in each.
SEEDS = {"codex-dry-runs": "codex", "codex-compacted": "codex", "codex-resumed": "codex"}


@contextmanager
def environment(cwd: Path, seed: str) -> Iterator[None]:
    """``cwd`` made empty and entered, the model settings unset, ``COLUMNS`` fixed and
    ``uuid.uuid4`` seeded; all undone afterwards (``cwd`` removed)."""
    saved = dict(os.environ)
    here = Path.cwd()
    rng = random.Random(seed)

    def uuid4() -> uuid.UUID:
        return uuid.UUID(int=rng.getrandbits(128), version=4)

    shutil.rmtree(cwd, ignore_errors=True)
    cwd.mkdir(parents=True)
    for name in SETTINGS:
        os.environ.pop(name, None)
    os.environ.update({"COLUMNS": COLUMNS, "TZ": "UTC"})
    os.chdir(cwd)
    try:
        with mock.patch("uuid.uuid4", uuid4):
            yield
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(cwd, ignore_errors=True)


@contextmanager
def locked() -> Iterator[None]:
    BASE.mkdir(parents=True, exist_ok=True)
    with (BASE / "lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def render(name: str, pack: Path) -> str:
    """The block ``name`` as it is today: its commands run, their outputs as shown."""
    run = Run(BASE / name, pack)
    out: list[str] = []
    with locked(), environment(run.cwd, SEEDS.get(name, name)):
        for step in RECIPES[name]:
            text = run.cli(*step.args(run))
            if step.shown is None:
                continue
            out.append("$ " + step.shown.format(*run.ids) + "\n")
            out.append(normalize(step.keep(text)))
            if step.after is not None:
                out.append(step.after(run))
        for stop in run.stops:
            stop()
    return "```text\n" + "".join(out) + "```\n"


def rewrite(readme: str, pack: Path) -> str:
    def block(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in RECIPES:
            raise SystemExit(f"README.md: no recipe for the output block {name!r}")
        return match["open"] + render(name, pack) + match["close"]

    return BLOCK.sub(block, readme)


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say whether it is stale")
    parser.add_argument(
        "--readme", type=Path, default=None, help="one page (default: README.md and docs/*.md)"
    )
    parser.add_argument("--pack", type=Path, default=PACK, help="the trajectory pack")
    options = parser.parse_args(argv)
    if options.readme is not None:
        targets = [options.readme]
    else:
        targets = [page for page in pages() if BLOCK.search(page.read_text(encoding="utf-8"))]
    stale = False
    for page in targets:
        before = page.read_text(encoding="utf-8")
        if not BLOCK.search(before):
            print(f"{page}: no <!-- output: NAME --> block", file=sys.stderr)
            return 1
        after = rewrite(before, options.pack)
        if after == before:
            continue
        if options.check:
            stale = True
            diff = difflib.unified_diff(
                before.splitlines(keepends=True),
                after.splitlines(keepends=True),
                f"{page.name} (as committed)",
                f"{page.name} (as the commands print it now)",
            )
            sys.stdout.writelines(diff)
            continue
        page.write_text(after, encoding="utf-8")
        print(f"rewrote {page}")
    if stale:
        print("README outputs are stale: run python scripts/readme_outputs.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main_())
