"""``context_compact.testing``: the public kit to test a loop offline, complete and light."""

from __future__ import annotations

import subprocess
import sys

import context_compact.testing as kit
from context_compact import Compactor, Policy, StoreUnavailable, check


def test_every_name_of_the_kit_is_importable_and_named_in_its_docstring() -> None:
    doc = kit.__doc__ or ""
    for name in kit.__all__:
        assert getattr(kit, name) is not None
    for name in ("ScriptedProvider", "FaultyStore", "MemoryStore", "synthetic_session"):
        assert name in kit.__all__ and name in doc


def test_the_kit_loads_no_bench_module() -> None:
    code = (
        "import sys, context_compact.testing\n"
        "print(sorted(m for m in sys.modules if m.startswith('context_compact_bench')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_kit_drives_a_compactor_through_a_refused_write_offline() -> None:
    store = kit.FaultyStore(kit.MemoryStore(), fail={"save_blob"}, times=1)
    c = Compactor(Policy.default(context_limit=6_000), store, kit.BenchSummarizer())
    w = kit.synthetic_session(30, seed=3)
    messages = [{"role": "user", "content": w.request}]
    for turn in w.turns:
        try:
            messages = c.prepare(messages, w.request)
        except StoreUnavailable:  # the one refused write, over the limit: retried as it was
            messages = c.prepare(messages, w.request)
        assert check(messages) == []
        messages = [*messages, turn.assistant, turn.results]
    assert store.failed == ["save_blob"]
