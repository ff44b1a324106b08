"""The README's inspector screenshots, from a real log of the shared pack.

The Codex rollout the README's Sessions section uses is imported into a fresh work
directory (``context-compact import``; the pack is only read), compacted under the default
policy at 12,500 tokens into a new session (``context-compact compact``), and both sessions
are shown by ``context-compact ui`` in headless Chromium (Debian's ``/usr/bin/chromium``):

* ``docs/inspector/overview.png``: the compacted session, request 34 (the largest) selected;
* ``docs/inspector/archive.png``: a cleared result's marker followed to its archived text;
* ``docs/inspector/search.png``: a search for text that left the view;
* ``docs/inspector/compare.png``: the imported session under ``default`` and ``codex``.

    .venv/bin/python benchmarks/inspector_screenshots.py [--pack /work/shared/data/trajectories]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

LOG = (
    "codex/AcidicSoil-codex-session-view/"
    "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
)
OUT = Path("docs/inspector")


def cc(workdir: Path, *args: str) -> str:
    command = [sys.executable, "-m", "context_compact.cli", *args]
    return subprocess.run(command, cwd=workdir, check=True, capture_output=True, text=True).stdout


def shoot(page: Any, name: str, selector: str | None = None) -> None:
    target = page.locator(selector) if selector else page
    target.screenshot(path=str(OUT / name), **({} if selector else {"full_page": False}))
    print(OUT / name)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pack", type=Path, default=Path("/work/shared/data/trajectories"))
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    workdir = Path(tempfile.mkdtemp(prefix="cc-shots-"))
    OUT.mkdir(parents=True, exist_ok=True)
    server = None
    try:
        cc(workdir, "import", str(args.pack / LOG))
        imported = json.loads(cc(workdir, "sessions", "--json"))[0]["id"]
        cc(workdir, "compact", imported, "--policy", "default", "--context-limit", "12500")
        compacted = json.loads(cc(workdir, "sessions", "--json"))[0]["id"]
        server = subprocess.Popen(
            [sys.executable, "-u", "-m", "context_compact.cli", "ui", "--port", "0"],
            cwd=workdir,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert server.stdout is not None
        url = server.stdout.readline().split(" at ", 1)[1].split()[0]
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            page.goto(f"{url}#{compacted}")
            page.wait_for_selector("body[data-ready]")
            page.fill("#request-number", "34")
            page.dispatch_event("#request-number", "change")
            page.wait_for_function(
                "document.querySelector('#view-title').textContent.startsWith('Request 34 ')"
            )
            shoot(page, "overview.png")
            # A result cleared into a shared pack: its link opens at its own lines.
            page.evaluate(
                """() => [...document.querySelectorAll('#view a.archive-link')]
                  .find(a => /^ lines [2-9]/.test(a.nextSibling && a.nextSibling.textContent))
                  .click()"""
            )
            page.wait_for_function(
                "document.querySelector('#archive-text').textContent !== 'loading...'"
            )
            page.locator("#view-box").evaluate("box => window.scrollTo(0, box.offsetTop - 8)")
            shoot(page, "archive.png")
            page.fill("#search-q", "lmstudio")
            page.press("#search-q", "Enter")
            page.wait_for_selector("#search-hits button")
            shoot(page, "search.png", "#search-box")
            page.goto(f"{url}#{imported}")
            page.reload()
            page.wait_for_selector("body[data-ready]")
            page.select_option("#policy-b", "codex")
            page.fill("#compare-limit", "12500")
            page.click("#compare-form button")
            page.wait_for_selector("#compare .policy svg polyline")
            page.wait_for_timeout(300)
            shoot(page, "compare.png", "#compare-box")
            browser.close()
    finally:
        if server is not None:
            server.terminate()
            server.wait()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
