"""What a model answered to the probes (``answerer``), counted per kind, and its table.

Per kind of probe: ``asked``; ``right`` (the exact answer in the model's reply, whitespace
runs as one); the model-free verdict of the same probes at the same call (``view``,
``recall``, ``lost``) and how many of each the model got right (``view_right``...);
``in_prompt`` (the answer was in the prompt as sent, after cutting the view to the window);
``tool_calls`` made; ``errors`` (requests that failed, counted by kind in ``errors_by``).
An errored probe is asked and not right. ``cut``: prompts whose view lost messages to fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from context_compact.summary.facts import squash

from .probes import KINDS, OUTCOMES, Probe

FIELDS = (
    "asked",
    "right",
    *(name for o in OUTCOMES for name in (o, f"{o}_right")),
    "in_prompt",
    "tool_calls",
    "errors",
)
EXAMPLES = 3


def _empty() -> dict[str, dict[str, int]]:
    return {k: dict.fromkeys(FIELDS, 0) for k in KINDS}


@dataclass
class AnswerCounts:
    by_kind: dict[str, dict[str, int]] = field(default_factory=_empty)
    errors_by: dict[str, int] = field(default_factory=dict)
    cut: int = 0
    wrong_examples: list[str] = field(default_factory=list)

    def record(
        self,
        probe: Probe,
        outcome: str,
        *,
        answer: str | None,
        error: str | None,
        in_prompt: bool,
        cut: bool,
        tool_calls: int,
    ) -> None:
        mine = self.by_kind.setdefault(probe.kind, dict.fromkeys(FIELDS, 0))
        right = answer is not None and squash(probe.answer) in squash(answer)
        mine["asked"] += 1
        mine[outcome] += 1
        mine["in_prompt"] += in_prompt
        mine["tool_calls"] += tool_calls
        self.cut += cut
        if right:
            mine["right"] += 1
            mine[f"{outcome}_right"] += 1
        if error is not None:
            mine["errors"] += 1
            self.errors_by[error] = self.errors_by.get(error, 0) + 1
        elif not right and len(self.wrong_examples) < EXAMPLES:
            got = squash(answer or "")[:80]
            self.wrong_examples.append(
                f"{probe.kind} ({outcome}): {probe.question} -> {probe.answer[:60]!r}, got {got!r}"
            )

    def total(self, name: str) -> int:
        return sum(c.get(name, 0) for c in self.by_kind.values())

    def add(self, other: AnswerCounts) -> None:
        for kind, counts in other.by_kind.items():
            mine = self.by_kind.setdefault(kind, dict.fromkeys(FIELDS, 0))
            for name, n in counts.items():
                mine[name] = mine.get(name, 0) + n
        for name, n in other.errors_by.items():
            self.errors_by[name] = self.errors_by.get(name, 0) + n
        self.cut += other.cut
        room = EXAMPLES - len(self.wrong_examples)
        self.wrong_examples += other.wrong_examples[: max(0, room)]

    def as_dict(self) -> dict[str, Any]:
        return {
            "by_kind": self.by_kind,
            "errors_by": self.errors_by,
            "cut": self.cut,
            "wrong_examples": self.wrong_examples,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AnswerCounts:
        out = cls()
        out.by_kind = {k: dict(v) for k, v in data["by_kind"].items()}
        out.errors_by = dict(data["errors_by"])
        out.cut = int(data["cut"])
        out.wrong_examples = list(data["wrong_examples"])
        return out


def by_strategy(rows: list[Any]) -> dict[str, AnswerCounts]:
    """``BenchRow``s' (or their dicts') answers summed per strategy, in the order they ran."""
    out: dict[str, AnswerCounts] = {}
    for row in rows:
        data = row.get("answers") if isinstance(row, dict) else row.answers
        if data is None:
            continue
        strategy = row["strategy"] if isinstance(row, dict) else row.strategy
        out.setdefault(strategy, AnswerCounts()).add(AnswerCounts.from_dict(data))
    return out


def _of(right: int, asked: int) -> str:
    return f"{right}/{asked}" if asked else "-"


HEADERS = ["strategy", "kind", "right", "view", "recall", "lost", "in prompt", "tools", "errors"]


def answer_rows(sums: dict[str, AnswerCounts]) -> list[list[str]]:
    """Per strategy, each kind asked and then all: right/asked overall and per model-free
    verdict, answers in the prompt, tool calls, errors."""
    out = []
    for strategy, counts in sums.items():
        kinds = [(k, counts.by_kind[k]) for k in KINDS if counts.by_kind.get(k, {}).get("asked")]
        every = {name: counts.total(name) for name in FIELDS}
        for kind, c in [*kinds, ("all", every)]:
            out.append(
                [
                    strategy,
                    kind,
                    _of(c["right"], c["asked"]),
                    *(_of(c[f"{o}_right"], c[o]) for o in OUTCOMES),
                    str(c["in_prompt"]),
                    str(c["tool_calls"]),
                    str(c["errors"]),
                ]
            )
    return out


LEGEND = (
    "model answers: right/asked, then by the model-free verdict at the same call (view, "
    "recall, lost: right/asked of those). in prompt: the answer was in the prompt as sent "
    "(the view cut to the model's window). tools: read_file and recall calls run (up to 3 a "
    "probe). errors: requests that failed (counted wrong)."
)


def render_answers(rows: list[Any], answerer: dict[str, Any] | None, console: Console) -> None:
    sums = by_strategy(rows)
    if not sums:
        return
    where = ""
    if answerer is not None:
        window = answerer.get("window")
        size = f"window {window:,}" if window else "window unknown: the bench's budget"
        where = f" ({answerer.get('model')} at {answerer.get('url')}, {size})"
    table = Table(
        title=f"Probes answered by a model{where}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        padding=(0, 0, 0, 1),
        pad_edge=False,
    )
    for header in HEADERS:
        table.add_column(header, justify="left" if header in HEADERS[:2] else "right")
    for line in answer_rows(sums):
        table.add_row(*(escape(c) for c in line))
    console.print(table)
    for strategy, counts in sums.items():
        notes = []
        if counts.cut:
            notes.append(f"{counts.cut} prompts cut to the window")
        if counts.errors_by:
            notes.append(
                "errors: "
                + ", ".join(f"{n} {kind}" for kind, n in sorted(counts.errors_by.items()))
            )
        if notes:
            console.print(f"[dim]{escape(strategy)}: {escape('; '.join(notes))}[/dim]")
        for example in counts.wrong_examples:
            console.print(f"[dim]{escape(strategy)} wrong: {escape(example)}[/dim]")
    if answerer is not None and answerer.get("gave_up"):
        console.print(f"answerer: {escape(str(answerer['gave_up']))}")
    console.print(f"[dim]{escape(LEGEND)}[/dim]")


__all__ = ["FIELDS", "AnswerCounts", "answer_rows", "by_strategy", "render_answers"]
