"""Probes in the bench: judged at every call where content leaves the view, then tabled.

``ProbeTracker.observe`` is the replay's ``on_call`` hook. After every ``prepare`` it
registers what the loop appended (the originals), finds the atoms the returned view no
longer holds as given (``probes.Ledger.left``: the same comparison for every strategy),
derives their probes and judges each one against that view (the view the model gets next)
and, for an engine that keeps a session log, one ``recall(key)`` query made right then
(``recall_of``; the peers keep no log, so they can answer only in view). A probe can be
judged at several calls (a result cut to a preview, later cleared, later summarized); it
counts once, with its worst verdict: answered in view at every cut, else by recall, else
lost.

``ProbeCounts`` is what a bench row keeps: verdicts by kind, how many recall answers were on
the query's first page, a few lost probes spelled out. ``probe_table`` and
``probe_markdown`` lay counts out by strategy and kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rich.table import Table

from .probes import KINDS, OUTCOMES, Ledger, Probe, Recall, Verdict, judge, renderings, view_text

RANK = {outcome: i for i, outcome in enumerate(OUTCOMES)}
EXAMPLES = 5
SHORT_KINDS = {
    "error": "error",
    "file": "files",
    "last_read": "read",
    "last_result": "result",
    "next_step": "next",
    "constraint": "user",
}


@dataclass
class ProbeCounts:
    by_kind: dict[str, dict[str, int]] = field(
        default_factory=lambda: {k: dict.fromkeys(OUTCOMES, 0) for k in KINDS}
    )
    first_page: int = 0
    """Probes answered by recall on the first page of the query's result."""
    lost_examples: list[str] = field(default_factory=list)

    def total(self, outcome: str | None = None) -> int:
        return sum(
            n for counts in self.by_kind.values() for o, n in counts.items() if outcome in (None, o)
        )

    def add(self, other: ProbeCounts) -> None:
        for kind, counts in other.by_kind.items():
            mine = self.by_kind.setdefault(kind, dict.fromkeys(OUTCOMES, 0))
            for outcome, n in counts.items():
                mine[outcome] = mine.get(outcome, 0) + n
        self.first_page += other.first_page
        room = EXAMPLES - len(self.lost_examples)
        self.lost_examples += other.lost_examples[: max(0, room)]

    def as_dict(self) -> dict[str, Any]:
        return {
            "by_kind": self.by_kind,
            "first_page": self.first_page,
            "lost_examples": self.lost_examples,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProbeCounts:
        out = cls()
        out.by_kind = {k: dict(v) for k, v in data["by_kind"].items()}
        out.first_page = int(data["first_page"])
        out.lost_examples = list(data["lost_examples"])
        return out


def recall_of(compactor: Any) -> Recall | None:
    """One recall query, all its pages, through the compactor's public ``recall``; None for an
    engine that keeps no log."""
    if not compactor.keeps_log:
        return None

    def query(key: str) -> str:
        try:
            return str(compactor.recall(key, 0, 1 << 40).text)
        except ValueError:  # a key recall refuses (blank): nothing found
            return ""

    return query


Ask = Callable[[Probe, Verdict, list[Any]], None]
"""Told each probe, its verdict and the view it was judged against (``answerer``)."""


class ProbeTracker:
    def __init__(self, recall: Recall | None, ask: Ask | None = None) -> None:
        self.ledger = Ledger()
        self.recall = recall
        self.ask = ask
        self.verdicts: dict[tuple[str, str, str | None], tuple[Probe, Verdict]] = {}
        self.cuts = 0

    def observe(self, appended: list[Any], given: list[Any], view: list[Any]) -> None:
        self.ledger.add(appended)
        left = self.ledger.left(renderings(given), renderings(view))
        probes = self.ledger.probes(left) if left else []
        if not probes:
            return
        self.cuts += 1
        seen = view_text(view)
        pages: dict[str, str] = {}
        recall = self.recall

        def once(key: str) -> str:  # one query per key per call: the log did not change
            if key not in pages and recall is not None:
                pages[key] = recall(key)
            return pages.get(key, "")

        for probe in probes:
            verdict = judge(probe, seen, once if recall is not None else None)
            if self.ask is not None:
                self.ask(probe, verdict, view)
            old = self.verdicts.get(probe.ident)
            if old is None or RANK[verdict.outcome] > RANK[old[1].outcome]:
                self.verdicts[probe.ident] = (probe, verdict)

    def counts(self) -> ProbeCounts:
        out = ProbeCounts()
        for probe, verdict in self.verdicts.values():
            out.by_kind[probe.kind][verdict.outcome] += 1
            if verdict.outcome == "recall" and verdict.page == 1:
                out.first_page += 1
            if verdict.outcome == "lost" and len(out.lost_examples) < EXAMPLES:
                out.lost_examples.append(f"{probe.kind}: {probe.question} -> {probe.answer[:80]}")
        return out


def cell(counts: dict[str, int]) -> str:
    """``view / recall / lost`` of one kind ("-" when the kind had no probe)."""
    if not sum(counts.values()):
        return "-"
    return " / ".join(f"{counts.get(o, 0):,}" for o in OUTCOMES)


def probe_rows(rows: list[tuple[str, ProbeCounts | None, bool]]) -> list[list[str]]:
    """Per strategy: each kind's cell, then all kinds; ``(strategy, counts, recalls)``."""
    out = []
    for strategy, counts, recalls in rows:
        if counts is None:
            continue
        total = {o: counts.total(o) for o in OUTCOMES}
        kinds = (cell(counts.by_kind[k]) for k in KINDS)
        out.append([strategy, "yes" if recalls else "no", *kinds, cell(total)])
    return out


HEADERS = ["strategy", "recall", *(SHORT_KINDS[k] for k in KINDS), "all"]


def probe_table(title: str, rows: list[tuple[str, ProbeCounts | None, bool]]) -> Table:
    table = Table(title=title, title_justify="left")
    for header in HEADERS:
        table.add_column(header, justify="right" if header in SHORT_KINDS.values() else "left")
    for row in probe_rows(rows):
        table.add_row(*row)
    return table


LEGEND = (
    "probes: view / recall / lost. error: the error line of a command whose result left the "
    "view (recall key: the command); files: each file written or edited (key: the tool's "
    "name); read: the last file read; result: the last line of the newest command's result; "
    "next: the newest stated next step; user: each user constraint or correction (next and "
    "user have no key: view only). recall: the engine keeps a log to search (the peers do "
    "not: they answer in view or not at all). A strategy is probed on what it drops: one that "
    "drops less has fewer probes."
)


__all__ = [
    "HEADERS",
    "LEGEND",
    "ProbeCounts",
    "ProbeTracker",
    "cell",
    "probe_rows",
    "probe_table",
    "recall_of",
]
