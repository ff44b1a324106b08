"""The CLI agent's ``notes`` tool: offered under the default engine, acknowledged, and what
it noted shown verbatim in the summary the loop's next compaction makes."""

from __future__ import annotations

from pathlib import Path

from context_compact import Compactor, FileStore, Policy
from context_compact.agent.loop import Agent
from context_compact.agent.tools import NOTES_TOOL_NAME, TOOL_SCHEMAS, Workspace
from context_compact.markers import NOTED
from context_compact.messages import block_type, blocks
from context_compact.testing.model import ScriptedProvider, tool_call, tool_calls

NOTE = "m3.py holds the only caller of parse(); change both together."


def agent(root: Path, policy: Policy, provider: ScriptedProvider) -> Agent:
    for i in range(12):
        (root / f"m{i}.py").write_text(f"def f{i}(x):  # module {i}\n" * 80, encoding="utf-8")
    store = FileStore(root / "store")
    return Agent(provider, Compactor(policy, store), Workspace(root, read_roots=(store.root,)))


def test_the_notes_tool_is_offered_only_where_the_engine_keeps_a_log(tmp_path: Path) -> None:
    default = agent(tmp_path, Policy.default(), ScriptedProvider(["done"]))
    seed = agent(tmp_path, Policy.seed(), ScriptedProvider(["done"]))
    assert NOTES_TOOL_NAME in [t["name"] for t in default.tools]
    assert seed.tools == TOOL_SCHEMAS


def test_a_note_is_acknowledged_and_shown_after_the_loops_next_summary(tmp_path: Path) -> None:
    reads = [
        tool_calls([("read_file", {"path": f"m{i}.py"})], text=f"Reading m{i}. " * 40)
        for i in range(12)
    ]
    script = [tool_call(NOTES_TOOL_NAME, {"note": NOTE}), tool_call(NOTES_TOOL_NAME, {}), *reads]
    provider = ScriptedProvider([*script, "done"])
    loop = agent(tmp_path, Policy.default(context_limit=5_000), provider)
    loop.run([], "Refactor parse().")
    results = [
        b
        for m in provider.calls[2]["messages"]
        for b in blocks(m)
        if block_type(b) == "tool_result"
    ]
    assert results[0]["content"] == NOTED and not results[0].get("is_error")
    assert results[1]["is_error"] is True
    assert any(e.stage == "summarize" for e in loop.compactor.events)
    last = provider.calls[-1]["messages"]
    assert any("Your notes" in str(m["content"]) and NOTE in str(m["content"]) for m in last)
