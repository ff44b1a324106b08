"""The system prompt and tool schemas count into every budget, and a change is counted again
(drop-in clients pass them before every request; only a change is re-counted)."""

from __future__ import annotations

from context_compact import Compactor, Policy
from context_compact.store.memory import MemoryStore


def test_a_changed_system_prompt_or_tool_list_is_counted_again() -> None:
    c = Compactor(Policy.default(context_limit=20_000), MemoryStore())
    c.set_request("short", [])
    small = c.engine.session.state.overhead
    c.set_request("short", [])
    assert c.engine.session.state.overhead == small
    prompt = "a much longer system prompt " * 200
    c.set_request(prompt, [])
    longer = c.engine.session.state.overhead
    assert longer > small
    c.set_request(prompt, [{"name": "bash", "description": "d" * 800}])
    assert c.engine.session.state.overhead > longer
    c.set_request("short", [])
    assert c.engine.session.state.overhead == small
