"""Every rule id the source cites (``S-4.2``) is a heading of the documentation, once: a reader
of the code can look up the rule it implements (``docs/reference-pipeline.md``)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RULE = re.compile(r"\bS-\d+\.\d+\b")
HEADING = re.compile(r"^#{2,6} (S-\d+\.\d+)\b", re.M)


def cited() -> dict[str, list[str]]:
    """Each rule id the source cites, with the files citing it."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "src").rglob("*.py")):
        for rule in set(RULE.findall(path.read_text(encoding="utf-8"))):
            found.setdefault(rule, []).append(path.relative_to(ROOT).as_posix())
    return found


def headings() -> Counter[str]:
    return Counter(
        rule
        for path in sorted((ROOT / "docs").glob("*.md"))
        for rule in HEADING.findall(path.read_text(encoding="utf-8"))
    )


def test_every_rule_the_source_cites_is_a_heading_of_the_docs() -> None:
    documented = headings()
    missing = {rule: files for rule, files in cited().items() if rule not in documented}
    assert not missing, missing
    assert len(cited()) > 20  # the reader finds the citations it is meant to


def test_each_rule_is_a_heading_once() -> None:
    twice = [rule for rule, count in headings().items() if count > 1]
    assert not twice, twice
