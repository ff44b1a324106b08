"""The policy's knobs that peers have, each against the peer behaviour it mirrors:
Anthropic's ``clear_tool_uses`` (``exclude_tools``, ``keep`` tool uses, ``placeholder``),
LangChain's ``SummarizationMiddleware`` (``trigger=("messages", N)``, ``summary_prompt``,
``token_counter``), and a caller's "compact now?" hook."""

from __future__ import annotations

from typing import Any

import pytest

from context_compact import Compactor, MemoryStore, Policy, check
from context_compact.session.knobs import CompactionCheck
from context_compact.summary import LLMSummarizer
from context_compact.testing.model import ScriptedProvider

REQUEST = "read every log part and remember the notes"


def output(k: int) -> str:
    return f"needle-{k:03d}\n" + f"log {k:03d} line: status=ok latency=12ms\n" * 60


def turn(k: int, tool: str = "read_log") -> list[dict[str, Any]]:
    use = {"type": "tool_use", "id": f"t{k:03d}", "name": tool, "input": {"part": k}}
    result = {"type": "tool_result", "tool_use_id": f"t{k:03d}", "content": output(k)}
    return [
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]


def views(cc: Compactor, turns: int, tool_of: Any = lambda k: "read_log") -> list[Any]:
    """The docs' loop (append each turn to the list ``prepare`` returned): every view."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": REQUEST}]
    out = []
    for k in range(turns):
        messages = cc.prepare(messages + turn(k, tool_of(k)), REQUEST)
        assert check(messages) == []
        out.append(messages)
    return out


def run(cc: Compactor, turns: int, tool_of: Any = lambda k: "read_log") -> list[dict[str, Any]]:
    return views(cc, turns, tool_of)[-1]


def cleared_ever(all_views: list[Any], prefix: str = "[Tool result cleared") -> set[int]:
    """The turns whose result some view showed cleared."""
    return {
        int(i[1:]) for view in all_views for i, t in results(view).items() if t.startswith(prefix)
    }


def results(view: list[dict[str, Any]]) -> dict[str, str]:
    out = {}
    for message in view:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result":
                out[block["tool_use_id"]] = block["content"]
    return out


def compactor(limit: int = 6_000, **knobs: Any) -> Compactor:
    # Marks under which these short loops clear without a summary in the same call (a summary
    # would take the cleared results at once): the knobs are what is tested, not the marks.
    marks = {"high_water": 0.85, "low_water": 0.40}
    return Compactor(Policy.default(context_limit=limit, **{**marks, **knobs}), MemoryStore())


def test_exclude_tools_never_clears_that_tools_results_as_anthropics_clear_tool_uses() -> None:
    cc = compactor(exclude_tools=("memory",))
    cleared = cleared_ever(views(cc, 30, lambda k: "memory" if k % 5 == 0 else "read_log"))
    assert cleared, "nothing was cleared"
    assert all(k % 5 for k in cleared)  # no memory result among them


def test_without_exclude_tools_the_same_results_are_cleared() -> None:
    cleared = cleared_ever(views(compactor(), 30, lambda k: "memory" if k % 5 == 0 else "x"))
    assert any(k % 5 == 0 for k in cleared)


def newest_cleared(all_views: list[Any], n: int) -> int:
    """Views in which one of the ``n`` newest results was shown cleared."""
    count = 0
    for view in all_views:
        shown = results(view)
        newest = sorted(shown)[-n:]
        count += any(shown[i].startswith("[Tool result cleared") for i in newest)
    return count


def test_keep_recent_tool_uses_keeps_the_n_newest_results_whole_as_clear_tool_uses_keep() -> None:
    cc = compactor(12_000, keep_recent_tool_uses=6)
    kept = views(cc, 40)
    assert "clear_old_results" in {e.stage for e in cc.events}
    assert newest_cleared(kept, 6) == 0
    # The default keeps fewer: the results of the newest three turns.
    assert newest_cleared(views(compactor(12_000), 40), 6) > 0


def test_a_custom_placeholder_replaces_the_cleared_text_and_still_names_the_file() -> None:
    cc = compactor(clear_placeholder="[cleared by policy; full text: {where}]")
    all_views = views(cc, 30)
    assert cleared_ever(all_views, "[cleared by policy")
    assert not cleared_ever(all_views)
    for view in all_views:
        for i, text in results(view).items():
            if text.startswith("[cleared by policy"):
                where = text.removeprefix("[cleared by policy; full text: ").removesuffix("]")
                path = where.split(" lines ")[0]
                assert f"needle-{int(i[1:]):03d}" in cc.store.read_text(path)


@pytest.mark.parametrize(
    "bad",
    [
        {"clear_placeholder": "[cleared]"},
        {"clear_placeholder": "[cleared {tool}]"},
        {"exclude_tools": "memory"},
        {"keep_recent_tool_uses": -1},
        {"trigger_messages": 1},
        {"summary_prompt": "  "},
    ],
)
def test_each_knob_is_validated(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Policy.default(**bad)


def test_exclude_tools_given_as_a_list_is_kept_as_a_tuple() -> None:
    assert Policy.default(exclude_tools=["memory"]).exclude_tools == ("memory",)


def test_a_message_count_trigger_summarizes_under_the_token_budget_as_langchains() -> None:
    """LangChain ``SummarizationMiddleware(trigger=("messages", 20))``: over 20 messages the
    older ones are summarized, whatever their size in tokens."""
    cc = Compactor(Policy.default(context_limit=200_000, trigger_messages=20), MemoryStore())
    view = run(cc, 15)
    assert "summarize" in {e.stage for e in cc.events}
    assert len(view) <= 20
    # Without it, nothing happens at this size.
    plain = Compactor(Policy.default(context_limit=200_000), MemoryStore())
    assert len(run(plain, 15)) == 31 and plain.events == []


def test_a_replacement_summary_prompt_is_the_system_prompt_the_model_summarizer_gets() -> None:
    provider = ScriptedProvider(["the summary"] * 10)
    prompt = "Summarize as a haiku."
    policy = Policy.default(context_limit=200_000, trigger_messages=20, summary_prompt=prompt)
    cc = Compactor(policy, MemoryStore(), LLMSummarizer(provider))
    run(cc, 15)
    assert provider.calls
    assert provider.calls[0]["system"] == prompt


def test_an_injected_token_counter_sizes_every_budget_as_langchains_token_counter() -> None:
    def chars(text: str) -> int:
        return len(text)  # a tokenizer four times as costly as our estimate

    cc = Compactor(Policy.default(context_limit=20_000), MemoryStore(), token_counter=chars)
    assert cc.tokens.backend == "custom"
    run(cc, 12)
    assert cc.events, "the custom counts pass the limit; our estimate would not"
    plain = Compactor(Policy.default(context_limit=20_000), MemoryStore())
    run(plain, 12)
    assert plain.events == []


def test_the_should_compact_hook_decides_while_the_request_fits() -> None:
    asked: list[CompactionCheck] = []

    def at_ten_messages(check: CompactionCheck) -> bool:
        asked.append(check)
        return check.messages > 10

    policy = Policy.default(context_limit=200_000, trigger_messages=10)
    never = Compactor(policy, MemoryStore(), should_compact=lambda c: False)
    run(never, 15)
    assert never.events == []  # the hook's False holds off the policy's own trigger
    cc = Compactor(policy, MemoryStore(), should_compact=at_ten_messages)
    run(cc, 15)
    assert asked and asked[0].limit == 200_000 and asked[0].messages == 3
    assert "summarize" in {e.stage for e in cc.events}


def test_the_should_compact_hook_cannot_hold_off_a_request_over_the_limit() -> None:
    cc = Compactor(
        Policy.default(context_limit=6_000), MemoryStore(), should_compact=lambda c: False
    )
    view = run(cc, 30)
    assert cc.events
    assert cc.tokens.messages(view) <= 6_000
