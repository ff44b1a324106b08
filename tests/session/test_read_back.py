"""A result we persisted, read back with a tool that returns whole files, comes back in pages
the view can hold, each naming the next, with the file's last lines: never as the same marker
of itself (a loop that would never show what was elided)."""

from __future__ import annotations

import re
from typing import Any

from context_compact import Compactor, MemoryStore, Policy
from context_compact.messages import block_type, blocks, result_text

PATH = re.compile(r"/memory/\.task_outputs/tool-results/sha256-[0-9a-f]+\.txt")


def call(n: int, path: str) -> dict[str, Any]:
    use = {"type": "tool_use", "id": f"t{n}", "name": "read_file", "input": {"path": path}}
    return {"role": "assistant", "content": [use]}


def result(n: int, text: str) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": f"t{n}", "content": text}
    return {"role": "user", "content": [block]}


def last_result(view: list[Any]) -> str:
    found = [b for m in view for b in blocks(m) if block_type(b) == "tool_result"]
    return result_text(found[-1])


def test_a_whole_file_read_tool_gets_the_first_and_last_line_back_within_three_reads() -> None:
    store = MemoryStore()
    compactor = Compactor(Policy.default(context_limit=20_000), store)
    lines = [f"line {i:05d}: " + "some log output with words in it " * 2 for i in range(4_000)]
    big = "\n".join(lines)
    request = "find what the log says at its end"
    messages: list[Any] = [
        {"role": "user", "content": request},
        call(0, "log.txt"),
        result(0, big),
    ]
    messages = compactor.prepare(messages, request)
    marker = last_result(messages)
    assert big not in marker and PATH.search(marker)
    seen = [marker]
    path = PATH.findall(marker)[0]
    for n in range(1, 4):  # the model reads what the view names, with a whole-file tool
        messages = [*messages, call(n, path), result(n, store.read_text(path))]
        messages = compactor.prepare(messages, request)
        shown = last_result(messages)
        assert shown != seen[-1], "the same marker of itself again"
        seen.append(shown)
        if lines[0] in "".join(seen) and lines[-1] in "".join(seen):
            break
        named = [p for p in PATH.findall(shown) if p != path]
        path = named[-1]
    assert lines[0] in "".join(seen) and lines[-1] in "".join(seen)
    assert len(seen) - 1 <= 3


def test_each_page_names_the_next_until_the_whole_file_was_shown() -> None:
    store = MemoryStore()
    compactor = Compactor(Policy.default(context_limit=20_000), store)
    lines = [f"row {i:05d} " + "x" * 60 for i in range(3_000)]
    big = "\n".join(lines)
    request = "read it all"
    messages: list[Any] = [{"role": "user", "content": request}, call(0, "f"), result(0, big)]
    messages = compactor.prepare(messages, request)
    path = PATH.findall(last_result(messages))[0]
    shown_pages = []
    for n in range(1, 40):
        messages = [*messages, call(n, path), result(n, store.read_text(path))]
        messages = compactor.prepare(messages, request)
        shown = last_result(messages)
        shown_pages.append(shown)
        following = re.search(r"read_file (\S+) \(it holds the rest", shown)
        if following is None:  # the last page came back whole
            break
        path = following.group(1)
    else:
        raise AssertionError("the pages never ended")
    everything = "".join(shown_pages)
    assert all(line in everything for line in lines)


def test_a_copy_saved_by_a_failed_attempt_is_no_read_back() -> None:
    """The store may hold a result's file before its edit is journaled (the append failed
    after the copy was written); the retry shows the same preview an unfaulted run shows."""
    big = "\n".join(f"line {i:05d} " + "text " * 12 for i in range(3_000))
    request = "what does the log say?"

    def marker(store: MemoryStore) -> str:
        compactor = Compactor(Policy.default(context_limit=20_000), store)
        messages: list[Any] = [{"role": "user", "content": request}, call(0, "log"), result(0, big)]
        return last_result(compactor.prepare(messages, request))

    unfaulted = marker(MemoryStore())
    retried_store = MemoryStore()
    retried_store.save_blob(big)  # the failed attempt's copy
    assert marker(retried_store) == unfaulted
