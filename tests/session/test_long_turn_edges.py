"""The edges of "never gives up": what must be an error is a clear one, the rest compacts."""

from __future__ import annotations

from typing import Any

import pytest

from api_rules import thinking_request, violation_text
from context_compact import CompactionFailed, Compactor, MemoryStore, Policy, StoreUnavailable
from context_compact.quoting import opening, unquote
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.faulty import FaultyStore

THINK = {"type": "thinking", "thinking": "plan", "signature": "sig"}


def loop(steps: int, chars: int = 2_000) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for k in range(steps):
        opener = [THINK] if k == 0 else []
        use = {"type": "tool_use", "id": f"t{k}", "name": "bash", "input": {"command": "ls"}}
        out.append({"role": "assistant", "content": [*opener, use]})
        result = {"type": "tool_result", "tool_use_id": f"t{k}", "content": f"{k} " + "x" * chars}
        out.append({"role": "user", "content": [result]})
    return out


def test_summarize_all_leaves_the_request_the_summary_and_the_unseen_results() -> None:
    c = Compactor(Policy.default(context_limit=50_000), MemoryStore(), BenchSummarizer())
    history = loop(12)
    view = c.compact_history(history, "go", keep_recent_turns=0)
    assert [m["role"] for m in view] == ["user", "user", "user"]
    assert view[0] == history[0] and view[1]["content"].startswith("[Compacted]")
    # The newest results were not seen yet: they ride along verbatim in the closing message.
    token = opening(view[2]["content"], "recent_steps")
    assert token is not None
    (steps,) = unquote(view[2]["content"], "recent_steps", token)
    assert "11 " + "x" * 2_000 in steps
    assert violation_text(thinking_request(view)) is None


def test_summarize_all_takes_the_final_answer_into_the_summary_and_its_archive() -> None:
    c = Compactor(Policy.default(context_limit=20_000), MemoryStore(), BenchSummarizer())
    answer = "".join(f"The final answer, line {k}, names part-{k:04d}.\n" for k in range(1_400))
    history = [*loop(2), {"role": "assistant", "content": [{"type": "text", "text": answer}]}]
    view = c.compact_history(history, "go", keep_recent_turns=0)
    assert [m["role"] for m in view] == ["user", "user"]
    assert view[0] == history[0] and view[1]["content"].startswith("[Compacted]")
    assert len(str(view)) < 8_000  # the 57,000-character answer is not in view
    page = c.recall("part-1399", limit=100_000)
    assert page.hits >= 1 and answer.splitlines()[-1] in page.text
    # The next request goes on from the summary.
    more = c.prepare([*history, {"role": "user", "content": "and now?"}], "and now?")
    assert more[-1] == {"role": "user", "content": "and now?"} and answer not in str(more)


def test_summarize_all_keeps_a_trailing_call_whose_results_are_still_to_come() -> None:
    c = Compactor(Policy.default(context_limit=50_000), MemoryStore(), BenchSummarizer())
    use = {"type": "tool_use", "id": "t_last", "name": "bash", "input": {"command": "ls"}}
    plain = [{**m, "content": [b for b in m["content"] if b != THINK]} for m in loop(6)[1:]]
    last = {"role": "assistant", "content": [{"type": "text", "text": "one more"}, use]}
    history = [loop(0)[0], *plain, last]
    view = c.compact_history(history, "go", keep_recent_turns=0)
    assert view[-1] == last and "[Compacted]" in str(view[1]["content"])
    assert len(view) == 3


def test_summarize_all_needs_the_default_engine() -> None:
    c = Compactor(Policy.seed(echo=False), MemoryStore(), lambda m: "s")
    with pytest.raises(ValueError, match="keep_recent_turns needs the default engine"):
        c.compact_history(loop(2), "go", keep_recent_turns=0)


def test_a_huge_answer_before_the_newest_request_is_summarized_not_returned() -> None:
    c = Compactor(Policy.default(context_limit=12_500), MemoryStore(), lambda m: "summary")
    history = [
        {"role": "user", "content": "write the report"},
        {"role": "assistant", "content": [{"type": "text", "text": "word " * 2_000_000}]},
        {"role": "user", "content": "now shorten it"},
    ]
    view = c.prepare(history, "now shorten it")
    assert view[-1] == history[-1] and len(view) == 3
    assert c.events[-1].stage == "summarize" and c.events[-1].after < 12_500


def test_a_system_prompt_and_tools_over_the_window_is_an_error_naming_both_sizes() -> None:
    c = Compactor(Policy.default(context_limit=4_096), MemoryStore(), lambda m: "s")
    c.set_request(system="rules " * 6_000, tools=[])
    with pytest.raises(
        CompactionFailed, match=r"take [\d,]+ tokens, more than the context limit of 4,096"
    ):
        c.prepare([{"role": "user", "content": "hi"}], "hi")


def test_a_newest_step_too_big_to_fit_is_named_with_its_size() -> None:
    policy = Policy.default(context_limit=4_096, max_over_limit=1, batch_budget=0.99)
    c = Compactor(policy, MemoryStore(), lambda m: "s")
    history = loop(1)
    use = [
        {"type": "tool_use", "id": f"p{k}", "name": "bash", "input": {"command": "cat"}}
        for k in range(40)
    ]
    history.append({"role": "assistant", "content": use})
    # Forty results of a preview's size each: together over the window, none alone too big.
    history.append(
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": f"p{k}", "content": "y" * 700}
                for k in range(40)
            ],
        }
    )
    with pytest.raises(CompactionFailed, match=r"the newest step \(messages 3-4\) [\d,]+"):
        c.prepare(history, "go")


def test_the_seed_under_a_refused_archive_raises_instead_of_eliding_without_a_copy() -> None:
    store = FaultyStore(MemoryStore(), fail={"write_transcript"})
    c = Compactor(Policy.seed(echo=False), store, lambda m: "s")
    history = loop(60, chars=1_500)
    with pytest.raises(StoreUnavailable, match="nothing left the context"):
        c.prepare(history, "go")
