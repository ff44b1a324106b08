"""Issue 21's benchmark: the inspector page on a 10,000-request session.

A synthetic coding session (``testing.workload.synthetic_session``, seed 0: results of 0.2-120k
characters) is driven through ``Policy.default(context_limit=12_500)`` into a SQLite store,
one ``prepare`` per request. Then, measured:

* the replay (``Inspection.load``: the journal read once, each request's view kept as runs
  over the distinct messages), which ``inspect ID --serve`` does before it prints its address;
* the page in headless Chromium (Debian's ``/usr/bin/chromium``): from navigation to the
  chart drawn and the last request's view shown (``body[data-ready]``, the page's own
  ``performance.now()``), with the bytes of ``/api/session``;
* a view fetched on demand (the middle request, typed into the request box) and a search for the
  fact planted in the first result, which left the view thousands of requests earlier;
* the self-contained HTML file: its size and the time it takes to open offline.

    .venv/bin/python benchmarks/inspector_load.py [--requests 10000] [--out FILE]

(``--out`` defaults to benchmarks/results/inspector.json.)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from context_compact import Compactor, Policy
from context_compact.cli.compact import replay_policy
from context_compact.inspector import Inspection, Inspector, InspectorServer, write_report
from context_compact.store import workdir_store
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session


def build(workdir: Path, requests: int) -> tuple[str, str]:
    store = workdir_store(workdir)
    w = synthetic_session(requests, seed=0)
    compactor = Compactor(Policy.default(context_limit=12_500), store, BenchSummarizer())
    messages: list[Any] = [{"role": "user", "content": w.request}]
    for turn in w.turns:
        messages = compactor.prepare(messages, w.request)
        messages += [turn.assistant, turn.results]
    compactor.prepare(messages, w.request)
    store.close()
    assert compactor.session_id is not None
    return compactor.session_id, w.turns[0].facts[0]


def ready(page: Any, url: str) -> int:
    page.goto(url)
    page.wait_for_selector("body[data-ready]", timeout=120_000)
    return int(page.get_attribute("body", "data-ready"))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/inspector.json"))
    parser.add_argument(
        "--workdir", type=Path, default=None, help="Keep the session here; reuse it if there."
    )
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="cc-inspector-"))
    scratch = Path(tempfile.mkdtemp(prefix="cc-report-"))
    try:
        t0 = time.perf_counter()
        store = workdir_store(workdir)
        kept = store.list_sessions()
        store.close()
        built: float | None = None
        if kept:
            sid, fact = kept[0]["id"], synthetic_session(1, seed=0).turns[0].facts[0]
        else:
            sid, fact = build(workdir, args.requests)
            built = time.perf_counter() - t0
        store = workdir_store(workdir)
        t0 = time.perf_counter()
        found = Inspection.load(store, sid)
        replay = time.perf_counter() - t0
        summary = json.dumps(found.summary()).encode()
        inspector = Inspector(store, sid)
        inspector.loaded[sid] = found
        server = InspectorServer(inspector, 0)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        html = scratch / "report.html"
        t0 = time.perf_counter()
        html_bytes = write_report(store, sid, html, replay_policy)
        html_write = time.perf_counter() - t0
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            loads = [ready(page, server.url) for _ in range(5)]
            middle = len(found.requests) // 2
            t0 = time.perf_counter()
            page.fill("#request-number", str(middle))
            page.dispatch_event("#request-number", "change")
            page.wait_for_function(
                "(k) => document.querySelector('#view-title').textContent.startsWith(k)",
                arg=f"Request {middle:,} ",
            )
            view_ms = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            page.fill("#search-q", fact)
            page.press("#search-q", "Enter")
            page.wait_for_selector("#search-hits button")
            search_ms = (time.perf_counter() - t0) * 1000
            hit = page.inner_text("#search-hits button")
            points = page.evaluate(
                "document.querySelector('#chart polyline.tokens').points.numberOfItems"
            )
            offline = browser.new_context(offline=True).new_page()
            html_load = ready(offline, html.as_uri())
            browser.close()
        server.shutdown()
        server.server_close()
        store.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    carried = [r.index for r in found.requests if fact in json.dumps(found.view(r.index))]
    result = {
        "requests": len(found.requests),
        "chart_points": points,
        "events": len(found.events),
        "cache_breaks": sum(r.cache_break for r in found.requests),
        "distinct_messages": len(found.messages),
        "largest_view_runs": max(len(r.spans) for r in found.requests),
        "session_build_s": None if built is None else round(built, 1),
        "replay_s": round(replay, 2),
        "api_session_bytes": len(summary),
        "page_ready_ms": {"runs": loads, "median": sorted(loads)[len(loads) // 2]},
        "view_on_demand_ms": round(view_ms),
        "search_ms": round(search_ms),
        "search_hit": hit,
        "fact_last_in_view_at_request": carried[-1] if carried else None,
        "html_bytes": html_bytes,
        "html_write_s": round(html_write, 2),
        "html_offline_ready_ms": html_load,
        "load_average_at_end": [round(x, 1) for x in os.getloadavg()],
        "cores": os.cpu_count(),
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
