"""A clearing writes one pack file; each cleared marker names its line range, and reading
those lines with the agent's own read_file gives the original result back."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from context_compact import Compactor, FileStore, Policy
from context_compact.agent.tools import Workspace
from context_compact.messages import block_type, blocks, result_text
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session
from histories import call, results, user

MARKER = re.compile(r"full text at (\S+) lines (\d+)-(\d+)\]")
MORE = re.compile(r"\n\.\.\. \(\d+ more lines; continue with offset=\d+\)$")


def test_cleared_results_are_read_back_exactly_from_their_pack_lines(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    c = Compactor(Policy.default(context_limit=30_000), store, BenchSummarizer())
    w = synthetic_session(120, seed=9)
    messages: list[Any] = [user(w.request)]
    originals: dict[str, str] = {}
    markers: dict[str, tuple[str, int, int]] = {}
    for turn in w.turns:
        messages = c.prepare(messages, w.request)
        for message in messages:
            for b in blocks(message):
                found = MARKER.search(str(b.get("content")))
                if block_type(b) == "tool_result" and found:
                    first, last = int(found.group(2)), int(found.group(3))
                    markers[b["tool_use_id"]] = (found.group(1), first, last)
        messages += [turn.assistant, turn.results]
        for b in blocks(turn.results):
            if block_type(b) == "tool_result":
                originals[b["tool_use_id"]] = result_text(b)
    workspace = Workspace(tmp_path, max_output_chars=10**7)
    for tool_id, (path, first, last) in markers.items():
        out = workspace.run("read_file", {"path": path, "offset": first, "limit": last - first + 1})
        shown = MORE.sub("", out.text)  # read_file's own paging hint
        assert shown == originals[tool_id].rstrip("\n")
    assert len(markers) >= 20
    # Results cleared together share one file.
    assert len({path for path, _, _ in markers.values()}) < len(markers) / 4


def test_a_result_with_carriage_returns_gets_a_file_of_its_own(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    c = Compactor(Policy.default(context_limit=6_000), store, BenchSummarizer(), session="s")
    odd = "progress\r" * 400 + "done"
    history: list[Any] = [user("t"), call("a"), results(("a", odd))]
    for i in range(8):
        history += [call(f"b{i}"), results((f"b{i}", f"line {i}\n" * 300))]
    c.prepare(history, "t")
    (clear,) = [r for r in store.records("s") if r.get("op") == "clear"]
    by_seq = {seq: (path, marker) for seq, _, path, marker in clear["blocks"]}
    path, marker = by_seq[2]
    assert "lines" not in marker and store.read_text(path) == odd
    assert any("lines" in marker for _, marker in by_seq.values())
