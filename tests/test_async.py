"""The async twins run the same engine off the event loop and give the same answers."""

from __future__ import annotations

import asyncio
import copy
import json
import re

from context_compact import Compactor, Policy
from context_compact.invariants import check
from context_compact.store.memory import MemoryStore


def _history(turns: int) -> list[dict]:
    msgs: list[dict] = [{"role": "user", "content": "fix the tests"}]
    for i in range(turns):
        msgs.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {}}],
            }
        )
        msgs.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "x" * 4000}],
            }
        )
    return msgs


def _unnamed(view: list[dict]) -> str:
    return re.sub(r"[0-9a-f]{12,}", "ID", json.dumps(view))


def test_aprepare_gives_what_prepare_gives_for_the_same_session() -> None:
    history = _history(60)
    sync = Compactor(Policy.default(context_limit=20_000), MemoryStore())
    want = sync.prepare(copy.deepcopy(history), "fix the tests")
    async_ = Compactor(Policy.default(context_limit=20_000), MemoryStore())
    got = asyncio.run(async_.aprepare(copy.deepcopy(history), "fix the tests"))
    # Each session names its own archive files; everything else must be equal.
    assert _unnamed(got) == _unnamed(want)
    assert check(got) == []


def test_concurrent_async_calls_on_one_compactor_run_one_at_a_time_and_stay_valid() -> None:
    compactor = Compactor(Policy.default(context_limit=20_000), MemoryStore())
    history = _history(40)

    async def main() -> list[list[dict]]:
        return await asyncio.gather(
            *(compactor.aprepare(history[: 2 * k + 1], "fix the tests") for k in range(5, 40, 5))
        )

    for view in asyncio.run(main()):
        assert check(view) == []
