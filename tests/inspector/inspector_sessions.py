"""Sessions for the inspector's tests: a long tool loop under the default policy, with one
distinctive string in an early result (``NEEDLE``), so that it leaves the view long before
the session ends; and ``serving``, an inspector server on a free port for as long as the
caller iterates."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from context_compact import Compactor, Policy
from context_compact.inspector import Inspector, InspectorServer
from context_compact.store.base import Store
from context_compact.testing.fakes import BenchSummarizer
from histories import pair, user

NEEDLE = "zebra-quartz-4711"
REQUEST = "Find why the parser drops the last line, and fix it."


def output(turn: int) -> str:
    lines = [f"src/parser.py:{turn * 7 + i}: token {turn}-{i} read" for i in range(30)]
    if turn == 3:
        lines.insert(12, f"the value that matters: {NEEDLE}")
    return "\n".join(lines)


def tool_loop(store: Store, turns: int, limit: int = 4_000, request: str = REQUEST) -> str:
    """A session of ``turns`` tool calls (one request each, plus the one that comes next)."""
    compactor = Compactor(Policy.default(context_limit=limit), store, BenchSummarizer())
    messages: list[Any] = [user(request)]
    for turn in range(turns):
        messages = compactor.prepare(messages, request)
        messages += pair(f"toolu_{turn:05d}", output(turn))
    compactor.prepare(messages, request)
    assert compactor.session_id is not None
    return compactor.session_id


def serving(inspector: Inspector) -> Iterator[str]:
    server = InspectorServer(inspector, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.url
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
