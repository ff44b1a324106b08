"""What can still be reached from a view: in it, or behind a reference the store issued.

Starting from the view's text, every path the store issued that appears in it is opened;
the text found there is searched the same way (archives name older archives), until
nothing new turns up. A result is *in view* when its planted fact is in the view itself,
*recoverable* when its content is in some reachable file, and *lost* otherwise.
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


def reachable_texts(view: list[Any], store: Store, root: str) -> tuple[str, list[str]]:
    view_text = to_json(view)
    pattern = re.compile(re.escape(root.rstrip("/")) + r"/[^\s\]\)\"'\\,]+")
    seen: set[str] = set()
    texts: list[str] = []
    frontier = [view_text]
    while frontier:
        text = frontier.pop()
        for path in pattern.findall(text):
            path = path.rstrip(".")
            if path in seen or not store.issued(path):
                continue
            seen.add(path)
            try:
                content = store.read_text(path)
            except (KeyError, OSError):
                continue
            texts.append(content)
            frontier.append(content)
    return view_text, texts


def reach(view: list[Any], store: Store, root: str, contents: Iterable[str]) -> Reach:
    """Classify every full result text of a session as in view, recoverable or lost."""
    view_text, files = reachable_texts(view, store, root)
    exact = set(files)
    archives = "\n".join(files)
    in_view = recoverable = 0
    lost: list[str] = []
    for content in contents:
        escaped = json.dumps(content, ensure_ascii=False)[1:-1]
        if escaped in view_text:
            in_view += 1
        elif content in exact or escaped in archives:
            recoverable += 1
        else:
            lost.append(content[:80])
    return Reach(in_view, recoverable, len(lost), tuple(lost))
