"""Small windows, honestly: a first request whose images alone keep the view over the limit
has them saved as files, named in place; when nothing can make the request fit, the error
counts every part that must fit, the summary included."""

from __future__ import annotations

import re
from typing import Any

import pytest
from test_media_exports import image, png

from context_compact import CompactionFailed, Compactor, MemoryStore, Policy

PICTURE = png(1500, 1500)
ASK = "what is in this picture? Describe it."


def step(k: int) -> list[dict[str, Any]]:
    use = {"type": "tool_use", "id": f"t{k}", "name": "look", "input": {"k": k}}
    result = {"type": "tool_result", "tool_use_id": f"t{k}", "content": f"{k} " + "obs " * 150}
    return [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]


def run(c: Compactor, first: dict[str, Any], steps: int = 12) -> list[dict[str, Any]]:
    history, view = [first], []
    for k in range(steps):
        view = c.prepare(history, ASK)
        history += step(k)
    return view


def test_a_first_request_whose_image_alone_keeps_a_small_window_over_is_saved_as_a_file() -> None:
    c = Compactor(Policy.default(context_limit=1_800), MemoryStore())
    first = {"role": "user", "content": [{"type": "text", "text": ASK}, image(PICTURE)]}
    view = run(c, first)
    text, marker = view[0]["content"]
    assert text == {"type": "text", "text": ASK}  # its words stay verbatim
    saved = r"message 0, image: .*to fit the context limit, saved at (\S+)\]"
    found = re.search(saved, marker["text"])
    assert found is not None and c.recover_file(found.group(1)) == PICTURE
    assert found.group(1) in c.store.read_text(view[1]["content"].split()[-1])  # the index
    kinds = [b.get("type") for m in view for b in m["content"] if isinstance(b, dict)]
    assert "image" not in kinds
    assert c.recall("message 0").hits >= 1  # the log keeps the request whole
    resumed = Compactor(Policy.default(context_limit=1_800), c.store, session=c.session_id)
    assert resumed.view() == c.view()


def test_a_first_request_image_that_fits_stays_in_view() -> None:
    c = Compactor(Policy.default(context_limit=8_000), MemoryStore())
    first = {"role": "user", "content": [{"type": "text", "text": ASK}, image(PICTURE)]}
    assert run(c, first, 30)[0] == first


def test_compaction_failed_counts_the_summary_that_must_fit_too() -> None:
    c = Compactor(Policy.default(context_limit=1_500), MemoryStore())
    with pytest.raises(CompactionFailed) as error:
        run(c, {"role": "user", "content": "describe " + "word " * 1_250}, 30)
    message = str(error.value)
    size = int(re.search(r"over its limit \(([\d,]+) >", message).group(1).replace(",", ""))
    parts = re.findall(r"(?:take|\)|summary) ([\d,]+)(?:;| tokens)", message)
    assert "the summary" in message
    assert sum(int(p.replace(",", "")) for p in parts) == size > 1_500
