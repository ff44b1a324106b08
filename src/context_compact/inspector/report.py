"""``inspect ID --html FILE``: the inspector page as one self-contained file, to attach to a
bug report. It opens offline (``file://``): the page's script and style are inlined, and the
answers the server would give are embedded in the page, computed once here, as gzipped JSON
in base64 (a log's text shrinks several times over; the browser's own ``DecompressionStream``
unpacks it, and base64 cannot close the script element it sits in):

* the summary, every distinct message once and each request's view as runs over them (the
  same data the server cuts views from), with the links each message names;
* the archived original behind every link (``recall.recover``);
* every logged message's readable text (``recall.message_text``), which the page searches
  the way ``recall`` does (case-insensitive substring), since no engine runs in a file;
* the side-by-side of two policies (``compare``), fixed when the file is written; past
  ``COMPARE_UP_TO`` requests it is left out (two replays of 10,000 requests take minutes;
  the served page runs them on demand), and the page says so.
"""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

from ..session.recall import message_text
from ..session.records import logged_messages
from ..store.base import Store
from .data import Inspection, Replay, archive, compare
from .server import asset

COMPARE = ("default", "codex")
COMPARE_UP_TO = 2_000


def report(
    store: Store,
    session: str,
    policies: tuple[str, str] = COMPARE,
    compare_up_to: int = COMPARE_UP_TO,
    replay: Replay | None = None,
) -> str:
    """The page for ``session`` with its data embedded (see the module docstring)."""
    found = Inspection.load(store, session)
    summary = found.summary()
    named = [found.links(store, [m]) for m in found.messages]
    events = found.event_rows()
    # Every file a message or an event links to is in the file: a link must open offline.
    linked = {p for group in named for p in group}
    paths = sorted(linked | {p for row in events for p in row["paths"] if store.issued(p)})
    texts = [
        {"message": r.seq, "role": r.message.get("role"), "text": message_text(r.message)}
        for r in logged_messages(store.records(session))
    ]
    data: dict[str, Any] = {
        "selected": session,
        "sessions": [{"id": session, "created": summary["created"], "source": summary["source"]}],
        "summary": summary,
        "events": events,
        "messages": found.messages,
        "links": named,
        "requests": [
            {"answer": r.answer, "cache_break": r.cache_break, "spans": r.spans}
            for r in found.requests
        ],
        "archives": {p: archive(store, session, p)["text"] for p in paths},
        "texts": texts,
        "compare": compare(store, session, *policies, summary["compare_limit"], replay)
        if replay is not None and len(found.requests) <= compare_up_to
        else {
            "limit": summary["compare_limit"],
            "policies": [],
            "left_out": f"two policies are not compared in this file (more than "
            f"{compare_up_to:,} requests, or no replay given): see them with "
            f"inspect {session} --serve",
        },
    }
    packed = gzip.compress(
        json.dumps(data, ensure_ascii=False, default=str).encode(), compresslevel=6, mtime=0
    )
    embedded = base64.b64encode(packed).decode()
    page = asset("index.html")
    page = page.replace(
        '<link rel="stylesheet" href="app.css">', f"<style>\n{asset('app.css')}</style>"
    )
    page = page.replace(
        '<script src="app.js"></script>',
        f'<script type="application/gzip;base64" id="cc-data">{embedded}</script>\n'
        f"<script>\n{asset('app.js')}</script>",
    )
    return page


def write_report(store: Store, session: str, path: Path, replay: Replay | None = None) -> int:
    """Write the page to ``path``; its size in bytes."""
    text = report(store, session, replay=replay)
    path.write_text(text, encoding="utf-8")
    return len(text.encode())


__all__ = ["COMPARE", "COMPARE_UP_TO", "report", "write_report"]
