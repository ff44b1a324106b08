"""After a summary, does the view say which files the agent changed and what the tests said?

Replays the recorded agent sessions in ``tests/data/trajectories`` (Claude Code, Codex,
SWE-agent, mini-swe-agent, OpenHands; see its SOURCES.md) through the default policy at a
small limit, one ``prepare`` per step as an agent loop makes it, with the extractive
summarizer (no model). After every summary it asks three questions of the view alone (its
text, no file read):

* files changed: of the files the session changed so far (a write, edit or patch call that
  did not fail), how many does the view name;
* last test status: does the view state the counts of the newest test run whose runner
  printed a summary (``N failed`` / ``N passed``);
* failing tests: of that run's failing test names, how many does the view name.

Three constructed edit-and-test loops (``--seeds``) follow the recorded sessions (those run
few tests and none that fail): read a module, write it, run pytest, whose summary names the
failing tests.
The truth is read from the log with a reader of its own (tool names and inputs below), not
from the ledger. ``--ledger-tokens 0`` leaves the ledger out of summaries: the "before".
``--handoff`` runs ``Policy.default(handoff=True)`` (a fresh context where a summary would be
made, no summarizer call) instead.

Beside the probes, per group: the rewrites (calls whose view does not start with the view
the call before returned: a prompt-cache break), the largest share of the limit the ledger's
quote took in a summary message, the tokens sent over all calls, the summaries made and the
summary lines marked as attributing to the user words no user message holds.

    python benchmarks/ledger_probes.py --limit 12000
    python benchmarks/ledger_probes.py --limit 12000 --ledger-tokens 0
    python benchmarks/ledger_probes.py --limit 12000 --handoff
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path
from typing import Any

from context_compact import Compactor, MemoryStore, Policy
from context_compact.loaders import load_all
from context_compact.markers import LEDGER_TAG, REQUEST_TAG
from context_compact.quoting import opening, unquote
from context_compact.session.outcomes import output_text, test_summary
from context_compact.sizing import TokenCounter

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "trajectories"

# The truth's own reader: tool -> where its path is; editors change unless they only view.
CHANGERS = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
    "write_file": "path",
    "edit_file": "path",
    "str_replace_editor": "path",
    "str_replace_based_edit_tool": "path",
}


def changed_by(block: dict[str, Any]) -> str | None:
    name, inputs = block.get("name"), block.get("input") or {}
    key = CHANGERS.get(str(name))
    if key is None or not isinstance(inputs, dict):
        return None
    if name in ("str_replace_editor", "str_replace_based_edit_tool") and inputs.get("command") in (
        None,
        "view",
    ):
        return None
    path = inputs.get(key)
    return path if isinstance(path, str) else None


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) if b.get("type") != "tool_use" else json.dumps(b.get("input"))
            for b in content
            if isinstance(b, dict)
        ) + "\n".join(text_of(b.get("content")) for b in content if isinstance(b, dict))
    return ""


class Truth:
    def __init__(self) -> None:
        self.calls: dict[str, str] = {}
        self.changed: list[str] = []
        self.test: Any = None

    def add(self, message: dict[str, Any]) -> None:
        content = message.get("content")
        if not isinstance(content, list):
            return
        for block in content:
            if block.get("type") == "tool_use":
                path = changed_by(block)
                if path is not None:
                    self.calls[str(block.get("id"))] = path
            elif block.get("type") == "tool_result":
                text = text_of(block.get("content"))
                path = self.calls.pop(str(block.get("tool_use_id")), None)
                failed = block.get("is_error") or text.lstrip().lower().startswith("error")
                if path is not None and not failed and path not in self.changed:
                    self.changed.append(path)
                summary = test_summary(output_text(text))
                if summary is not None:
                    self.test = summary


CODE = re.compile(r" [wepc]\d*@\d+(?:#[0-9a-f]+)?$")


def named_files(text: str) -> set[str]:
    """The paths the ledger's rendering names: ``- DIR NAME CODE, NAME, ...`` lines under a
    ``Files changed (...)`` heading, relative to the directory it says they are under."""
    named: set[str] = set()
    for part in re.findall(r"^Files changed \((.*?)\):\n((?:- .*\n?)*)", text, re.M):
        under = re.search(r", under (.+?)/;", part[0])
        base = under[1] + "/" if under else ""
        for line in part[1].splitlines():
            folder, _, names = line[2:].partition(" ")
            if folder == "...":
                continue
            folder = "" if folder == "./" else folder
            named.update(base + folder + CODE.sub("", n) for n in names.split(", "))
    return named


def stated(path: str, text: str, named: set[str]) -> bool:
    """The view names ``path``: whole, or in the ledger's grouped list of files changed."""
    return path in named or path in text


def view_text(view: list[dict[str, Any]]) -> str:
    return "\n".join(text_of(m.get("content")) for m in view)


COUNTER = TokenCounter()


def ledger_share(view: list[dict[str, Any]], limit: int) -> float:
    """The share of ``limit`` the ledger's quote takes in the view's summary message."""
    for message in view:
        content = message.get("content")
        token = opening(content, REQUEST_TAG) if isinstance(content, str) else None
        if token is not None:
            quoted = unquote(str(content), LEDGER_TAG, token)
            return COUNTER.text(quoted[0]) / limit if quoted else 0.0
    return 0.0


def replay(
    messages: list[dict[str, Any]],
    limit: int,
    ledger_tokens: int,
    handoff: bool = False,
    extra: dict[str, float] | None = None,
) -> list[Any]:
    knobs: dict[str, Any] = {"handoff": True} if handoff else {}
    policy = Policy.default(
        context_limit=limit, summarize_ahead=False, ledger_tokens=ledger_tokens, **knobs
    )
    store = MemoryStore("/memory")
    compactor = Compactor(policy, store, session="s")
    request = text_of(messages[0].get("content"))[:2000] if messages else ""
    truth, rows, sent = Truth(), [], []
    summaries = 0
    extra = {} if extra is None else extra
    before: list[Any] = []
    for message in messages:
        sent.append(message)
        truth.add(message)
        if message.get("role") != "user":
            continue
        try:
            view = compactor.prepare(sent, request)
        except Exception as error:  # a session too big for the limit: stop, say so
            rows.append(("error", type(error).__name__))
            break
        extra["rewrites"] = extra.get("rewrites", 0) + (view[: len(before)] != before)
        extra["sent"] = extra.get("sent", 0) + sum(COUNTER.count(m) for m in view)
        before = list(view)
        sent = list(view)
        made = sum(1 for e in compactor.events if e.stage == "summarize")
        if made == summaries:
            continue
        summaries = made
        extra["summaries"] = extra.get("summaries", 0) + 1
        extra["ledger"] = max(extra.get("ledger", 0.0), ledger_share(view, limit))
        flagged = sum(1 for e in compactor.events if e.stage == "summary_unverified")
        extra["unverified"] = flagged
        text = view_text(view)
        named = named_files(text)
        files = [p for p in truth.changed if stated(p, text, named)]
        test = truth.test
        status = None
        names: tuple[int, int] = (0, 0)
        if test is not None:
            status = (not test.failed or f"{test.failed} failed" in text) and (
                f"{test.passed} passed" in text
            )
            names = (sum(1 for n in test.failing if n in text), len(test.failing))
        rows.append((len(files), len(truth.changed), status, names))
    return rows


def edit_test_loop(steps: int = 60, seed: int = 0) -> list[dict[str, Any]]:
    """A constructed coding loop (the recorded sessions run few tests, none failing): read a
    module (a large result), write it, run pytest, whose summary names the failing tests."""
    rng = random.Random(seed)
    log: list[dict[str, Any]] = [{"role": "user", "content": "make the test suite pass"}]

    def pair(i: int, name: str, inputs: dict[str, Any], text: str) -> None:
        use = {"type": "tool_use", "id": f"{name}{i}", "name": name, "input": inputs}
        log.append({"role": "assistant", "content": [use]})
        result = {"type": "tool_result", "tool_use_id": f"{name}{i}", "content": text}
        log.append({"role": "user", "content": [result]})

    for i in range(steps):
        module = f"src/pkg/module_{rng.randint(0, 40)}.py"
        pair(i, "read_file", {"path": module}, f"def f_{i}(x):\n    return x\n" * 150)
        pair(i, "write_file", {"path": module, "content": f"# v{i}\n"}, f"Wrote {module}")
        failing = [f"tests/test_m{rng.randint(0, 9)}.py::test_case_{rng.randint(0, 99)}"]
        failing = failing[: rng.randint(0, 1)]
        lines = "".join(f"FAILED {name} - AssertionError\n" for name in failing)
        tally = f"{len(failing)} failed, " if failing else ""
        body = "." * 2_000 + "\n" + lines + f"==== {tally}{40 + i} passed in 1.2s ===="
        pair(i, "bash", {"command": "pytest -q"}, body)
    return log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--limit", type=int, default=12_000)
    parser.add_argument("--ledger-tokens", type=int, default=400)
    parser.add_argument("--handoff", action="store_true", help="Policy.default(handoff=True)")
    parser.add_argument("--seeds", type=int, default=3, help="constructed loops to run")
    args = parser.parse_args()
    mode = ", handoff" if args.handoff else ""
    print(f"limit {args.limit:,}, ledger_tokens {args.ledger_tokens}{mode}")
    recorded = [(s.format, s.name, s.messages) for s in load_all(DATA)]
    constructed = [
        ("constructed", f"edit-test loop, seed {seed}", edit_test_loop(seed=seed))
        for seed in range(args.seeds)
    ]
    for group, runs in (("recorded", recorded), ("constructed", constructed)):
        totals = [0, 0, 0, 0, 0, 0]
        measured = {"rewrites": 0.0, "sent": 0.0, "summaries": 0.0, "ledger": 0.0, "flags": 0.0}
        for fmt, name, messages in runs:
            extra: dict[str, float] = {}
            rows = replay(messages, args.limit, args.ledger_tokens, args.handoff, extra)
            for key in ("rewrites", "sent", "summaries"):
                measured[key] += extra.get(key, 0)
            measured["ledger"] = max(measured["ledger"], extra.get("ledger", 0.0))
            measured["flags"] += extra.get("unverified", 0)
            done = [r for r in rows if r[0] != "error"]
            files = (sum(r[0] for r in done), sum(r[1] for r in done))
            tests = [r[2] for r in done if r[2] is not None]
            names = (sum(r[3][0] for r in done), sum(r[3][1] for r in done))
            for i, v in enumerate((*files, sum(tests), len(tests), *names)):
                totals[i] += v
            stopped = f" (stopped: {rows[-1][1]})" if rows and rows[-1][0] == "error" else ""
            print(
                f"{fmt:13} {name[:40]:40} summaries {len(done):3}  "
                f"files {files[0]:4}/{files[1]:<4} test status {sum(tests):3}/{len(tests):<3} "
                f"failing names {names[0]:3}/{names[1]:<3}{stopped}"
            )
        print(
            f"{group}: files changed {share(totals[0], totals[1])}, last test status "
            f"{share(totals[2], totals[3])}, failing tests {share(totals[4], totals[5])}"
        )
        print(
            f"{group}: rewrites {measured['rewrites']:.0f}, summaries {measured['summaries']:.0f}, "
            f"tokens sent {measured['sent']:,.0f}, ledger's largest share of the limit "
            f"{100 * measured['ledger']:.2f}%, unverified user attributions "
            f"{measured['flags']:.0f}"
        )


def share(a: int, b: int) -> str:
    return f"{a}/{b} ({100 * a / b:.0f}%)" if b else f"{a}/{b}"


if __name__ == "__main__":
    main()
