"""The extractive summary and the summary score, made of a history's ``facts`` (``facts.py``).

``extractive_summary`` arranges what ``facts`` read under ``prompts.SUMMARY_SECTIONS`` (a
section with nothing found is left out), newest first within each section's share of
``limit`` characters, rolling over the ``previous`` summary it made.
``summary_score(summary, source)`` is the share of each kind present in a summary by exact
string (whitespace runs count as one space), so summaries can be compared without a model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .facts import Facts, facts, squash
from .prompts import SUMMARY_SECTIONS

# -- the extractive summary ------------------------------------------------------------------

# Each section's share of the summary's length (they sum to 1).
_SHARES = (0.24, 0.07, 0.12, 0.12, 0.1, 0.09, 0.1, 0.04, 0.12)


def _previous_sections(previous: str | None) -> dict[str, list[str]]:
    """The bullets of a summary in our format, by heading (empty for any other text)."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in (previous or "").splitlines():
        if line.startswith("## ") and line[3:].strip() in SUMMARY_SECTIONS:
            current = out.setdefault(line[3:].strip(), [])
        elif current is not None and line.startswith("- ") and line[2:] != "none":
            current.append(line[2:])
    return out


def _fit(items: list[str], budget: int, keep_first: int = 0) -> list[str]:
    """Items within ``budget`` characters: the first ``keep_first`` (the goal), then the
    newest; in their original order."""
    chosen = set(range(min(keep_first, len(items))))
    used = sum(len(items[i]) + 3 for i in chosen)
    for i in range(len(items) - 1, keep_first - 1, -1):
        if used + len(items[i]) + 3 > budget:
            if not chosen and budget > 40:  # the newest, cut, rather than an empty section
                return [_clip(items[i], budget - 3)]
            break
        chosen.add(i)
        used += len(items[i]) + 3
    return [items[i] for i in sorted(chosen)]


def _openings(user: list[tuple[int, str]], most: int = 3) -> list[tuple[int, str]]:
    """The first ``most`` sentences of each user message (a long pasted task states what it
    wants first; the rest stays in the message, pinned in view or archived)."""
    out: list[tuple[int, str]] = []
    for seq, sentence in user:
        if sum(1 for s, _ in out if s == seq) < most:
            out.append((seq, sentence))
    return out


def ending(text: str, n: int) -> str:
    """The end of ``text`` in at most ``n`` characters, from a sentence's start where one
    fits: an agent's last message says what it does next at its end, not its start."""
    text = squash(text)
    if len(text) <= n:
        return text
    tail = text[len(text) - n + 1 :]
    start = re.search(r"(?<=[.!?:])\s", tail)
    return "…" + (tail[start.end() :] if start else tail)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def extractive_summary(
    messages: list[Any],
    request: str | None = None,
    limit: int = 4_000,
    previous: str | None = None,
    *,
    found: Facts | None = None,
) -> str:
    """A summary in the structured sections, read off ``messages`` without a model:
    deterministic and at most ``limit`` characters. With ``previous`` (a summary it made
    before), the new items are added to the old ones, newest kept when space runs out.
    ``found``: ``facts(messages)`` if the caller has it already (read once for a summary
    and its score)."""
    found = facts(messages) if found is None else found
    old = _previous_sections(previous)
    goal = [f"Request: {_clip(squash(request), 600)}"] if request else []
    goal += [f'user: "{s}"' for _, s in _openings(found.user)]
    files = [f"{path} ({state})" for path, state in found.files.items()]
    commands, failed = [], []
    fixes: dict[str, str] = {}
    # The last run of each command line: whether a failed one passed later is read off it.
    last_run = {c.command: c for c in found.commands}
    for c in found.commands:
        shown = f" -> {c.error}" if c.error else (f" -> {c.shown}" if c.shown else "")
        commands.append(f"`{_clip(c.command, 160)}`{_clip(shown, 180)}")
        if c.error is None:
            continue
        final = last_run[c.command]
        later = [final] if final.seq > c.seq else []
        if later and later[-1].error is None:
            for error in c.errors:
                fixes[error] = f"fixed: `{_clip(c.command, 120)}` passed later"
        elif not later:
            failed.append(f"`{_clip(c.command, 160)}` -> {_clip(c.error, 100)}")
    errors = [f"{e} ({fixes[e]})" if e in fixes else e for _, e in found.errors]
    sections = [
        goal,
        [_clip(d, 300) for d in found.decisions],
        files,
        commands,
        errors,
        failed,
        list(found.identifiers),
        [_clip(q, 300) for q in found.questions[-3:]],
        [found.last_text] if found.last_text else [],
    ]
    lines: list[str] = []
    for name, share, new in zip(SUMMARY_SECTIONS, _SHARES, sections, strict=True):
        keep_first = 1 if name == SUMMARY_SECTIONS[0] else 0
        if name == SUMMARY_SECTIONS[-1]:
            room = int(share * limit) - len(name) - 4 - 3
            items = [ending(new[0], room)] if new else old.get(name, [])[-1:]
        else:
            before = old.get(name, [])
            keep_first = 1 if before and name == SUMMARY_SECTIONS[0] else keep_first
            items = list(dict.fromkeys([*before, *new]))
        items = _fit(items, int(share * limit) - len(name) - 4, keep_first)
        if items:
            lines += [f"## {name}", *(f"- {item}" for item in items)]
    text = "\n".join(lines) or "(nothing to summarize)"
    if len(text) > limit:
        text = text[: text.rfind("\n", 0, limit)]
    return text


# -- the score ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SummaryScore:
    """Of each kind of fact in the source, how many the summary holds by exact string."""

    found: dict[str, int]
    total: dict[str, int]

    def share(self, kind: str) -> float | None:
        total = self.total.get(kind, 0)
        return self.found.get(kind, 0) / total if total else None

    @property
    def overall(self) -> float | None:
        """All facts pooled: found / total (None when the source held none)."""
        total = sum(self.total.values())
        return sum(self.found.values()) / total if total else None

    def as_dict(self) -> dict[str, float | None]:
        out = {kind: self.share(kind) for kind in self.total}
        out["overall"] = self.overall
        return {k: (None if v is None else round(v, 4)) for k, v in out.items()}


SCORED = ("identifiers", "files", "errors", "user constraints")


def summary_score(summary: str, source: list[Any], *, found: Facts | None = None) -> SummaryScore:
    """How much of ``source`` (the messages a summary stands for) ``summary`` keeps: the
    identifiers, files, error lines and user sentences of ``facts``, each present by exact
    string, whitespace runs counted as one space (``found``: ``facts(source)``, if known)."""
    found = facts(source) if found is None else found
    items = {
        "identifiers": list(found.identifiers),
        "files": list(found.files),
        "errors": [e for _, e in found.errors],
        "user constraints": list(dict.fromkeys(s for _, s in found.user)),
    }
    text = squash(summary)
    return SummaryScore(
        found={kind: sum(1 for i in values if squash(i) in text) for kind, values in items.items()},
        total={kind: len(values) for kind, values in items.items()},
    )


__all__ = [
    "SCORED",
    "SummaryScore",
    "extractive_summary",
    "summary_score",
]
