"""What can still be reached from a view: in it, or behind a reference the store issued.

Starting from the view's text, every path the store issued that appears in it is opened;
the text found there is searched the same way (archives name older archives), until
nothing new turns up. A needle (a planted fact, or the full text of a tool result) is *in
view* when it is in the view itself, *recoverable* when it is in some reachable file, and
*lost* otherwise. Text is compared as it appears inside JSON (escaped, non-ASCII kept), the
form both the view and the archives are written in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..sizing import to_json
from ..store.base import Store


@dataclass(frozen=True)
class Reach:
    in_view: int
    recoverable: int
    lost: int
    lost_items: tuple[str, ...] = ()


def reachable_texts(
    view: list[Any], store: Store | None, root: str, max_reads: int | None = None
) -> tuple[str, list[str]]:
    """The view's text, and the text of every store file reachable from it: a file named in
    the view is one read away, a file named in that file two, and so on (``max_reads``
    bounds the depth; None follows every reference)."""
    view_text = to_json(view)
    if store is None or not root:
        return view_text, []
    pattern = re.compile(re.escape(root.rstrip("/")) + r"/[^\s\]\)\"'\\,]+")
    seen: set[str] = set()
    texts: list[str] = []
    level = [view_text]
    depth = 0
    while level and (max_reads is None or depth < max_reads):
        depth += 1
        following: list[str] = []
        for text in level:
            for path in pattern.findall(text):
                path = path.rstrip(".")
                if path in seen or not store.issued(path):
                    continue
                seen.add(path)
                try:
                    content = store.read_text(path)
                except (KeyError, OSError, ValueError):  # ValueError: a media file, not text
                    continue
                texts.append(content)
                following.append(content)
        level = following
    return view_text, texts


def _escaped(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def reach(
    view: list[Any],
    store: Store | None,
    root: str,
    contents: Iterable[str],
    pattern: re.Pattern[str] | None = None,
    max_reads: int | None = None,
) -> Reach:
    """Classify every needle (full result text, or planted fact) as in view, recoverable or lost.

    With ``pattern`` (which must match every needle) the texts are scanned once for all
    matches, which is what makes this fast on long synthetic sessions.
    """
    view_text, files = reachable_texts(view, store, root, max_reads)
    in_view = recoverable = 0
    lost: list[str] = []
    if pattern is not None:
        seen_in_view = set(pattern.findall(view_text))
        seen_in_files = {m for text in files for m in pattern.findall(text)}
        for needle in contents:
            if needle in seen_in_view:
                in_view += 1
            elif needle in seen_in_files:
                recoverable += 1
            else:
                lost.append(needle[:80])
        return Reach(in_view, recoverable, len(lost), tuple(lost))
    exact = set(files)
    archives = "\n".join(files)
    for content in contents:
        escaped = _escaped(content)
        if escaped in view_text:
            in_view += 1
        elif content in exact or escaped in archives or content in archives:
            recoverable += 1
        else:
            lost.append(content[:80])
    return Reach(in_view, recoverable, len(lost), tuple(lost))
