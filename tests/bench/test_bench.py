"""The bench: strategies keep histories valid, metrics are computed right, peers behave as
published, scripts come out of workloads and recorded sessions as expected."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from context_compact import MemoryStore, check
from context_compact.session.engine import SessionEngine
from context_compact.sizing import TokenCounter
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.reach import reach
from context_compact.testing.replay import replay
from context_compact.testing.script import Script, from_session, from_workload
from context_compact.testing.workload import synthetic_session
from context_compact_bench.pricing import Pricing
from context_compact_bench.strategies import NAMES, Setup, build
from context_compact_bench.strategies.anthropic_clearing import PLACEHOLDER, ToolResultClearing
from context_compact_bench.strategies.codex import SUMMARY_PREFIX, AutoCompact
from context_compact_bench.strategies.masking import ObservationMasking
from context_compact_bench.strategies.openhands import SummarizingCondenser
from context_compact_bench.suite import Chunks

ROOT = "/memory"


def run(name: str, workload: Any, budget: int = 4_000, overhead: int = 0) -> Any:
    store, summarizer = MemoryStore(ROOT), BenchSummarizer()
    strategy = build(name, Setup(budget, store, summarizer, overhead))
    return replay(
        strategy,
        workload,
        store=store,
        root=ROOT,
        overhead_tokens=overhead,
        window=budget,
        summarizer=summarizer,
    )


def tool_turn(i: int, text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    use = {"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {"command": f"c{i}"}}
    result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": text}
    return (
        {"role": "assistant", "content": [{"type": "text", "text": f"step {i}"}, use]},
        {"role": "user", "content": [result]},
    )


def hand_script(results: list[str], request: str = "do the thing") -> Script:
    steps = tuple(tool_turn(i, text) for i, text in enumerate(results))
    return Script(
        name="hand",
        head=({"role": "user", "content": request},),
        steps=steps,
        requests=(request,) * (len(steps) + 1),
        needles=tuple(results),
        kind="real",
    )


# -- every strategy ---------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_every_strategy_keeps_every_view_valid_on_a_small_synthetic_session(name: str) -> None:
    result = run(name, synthetic_session(40, seed=3), budget=4_000)
    assert result.error is None
    assert result.violations == 0
    assert result.calls == 41
    assert result.in_view + result.recoverable + result.lost == result.needles > 0


def test_the_default_loses_nothing_and_the_seed_does_on_the_same_session() -> None:
    workload = synthetic_session(60, seed=5)
    assert run("default", workload).lost == 0
    assert run("seed", workload).lost > 0


def test_strategies_do_not_modify_the_messages_they_are_given() -> None:
    script = hand_script(["x" * 9_000, "y" * 9_000, "z" * 9_000, "w" * 9_000])
    for name in NAMES:
        messages = script.messages
        snapshot = repr(messages)
        store, summarizer = MemoryStore(ROOT), BenchSummarizer()
        build(name, Setup(1_500, store, summarizer)).prepare(messages, "do the thing")
        assert repr(messages) == snapshot, name


# -- metrics on a hand-made session --------------------------------------------------------


def test_a_history_that_never_changes_has_no_rewrites_and_the_hand_computed_cache_share() -> None:
    script = hand_script(["alpha " * 50, "beta " * 80, "gamma " * 20])
    result = run("none", script, budget=100_000, overhead=100)
    counter = TokenCounter()
    sizes = [counter.message(m) for m in script.messages]
    # Call i sends the head plus i steps (2 messages each) plus the 100-token overhead; from
    # the second call on, everything the previous call sent is read from the cache.
    sent = [100 + sum(sizes[: 1 + 2 * i]) for i in range(4)]
    reads = [0] + sent[:3]
    assert result.view_tokens == sent
    assert result.rewrite_turns == 0
    assert result.cache_read == sum(reads)
    assert result.cache_write == sum(sent) - sum(reads)
    assert result.cache_read_share == pytest.approx(sum(reads) / sum(sent))
    assert result.total_input_tokens == sum(sent)
    assert result.peak_tokens == sent[-1]
    assert (result.in_view, result.recoverable, result.lost) == (3, 0, 0)
    assert result.summary_calls == 0
    assert result.output_tokens == sum(sizes[1::2])
    pricing = Pricing(input_per_mtok=1e6, output_per_mtok=2e6)  # $1 and $2 per token
    assert pricing.cost(result) == pytest.approx(
        0.1 * sum(reads) + 1.25 * (sum(sent) - sum(reads)) + 2 * result.output_tokens
    )


@dataclass
class KeepLast:
    """Sends only the last ``n`` messages: rewrites history once it is longer than that."""

    n: int
    name: str = "keep-last"

    def prepare(self, messages: list[Any], active_request: str) -> list[Any]:
        return messages[-self.n :]


def test_rewrites_overflow_and_losses_are_counted_for_a_strategy_that_drops_history() -> None:
    script = hand_script(["one " * 30, "two " * 30, "three " * 30, "four " * 30])
    result = replay(KeepLast(3), script, overhead_tokens=0, window=60)
    # Views: [h], [h a0 r0], [r0 a1 r1], [r1 a2 r2], [r2 a3 r3]: calls 2, 3 and 4 drop the
    # previous view's first message, so they rewrite history; results 0 and 1 are gone.
    assert result.rewrite_turns == 3
    assert (result.in_view, result.recoverable, result.lost) == (2, 0, 2)
    assert result.overflow_turn == 1
    assert result.over_budget_calls == 4


@dataclass
class Listening(KeepLast):
    """KeepLast that records the usage its loop reports after each request."""

    told: list[int] = field(default_factory=list)

    def observe(self, prompt_tokens: int) -> None:
        self.told.append(prompt_tokens)


def test_the_replay_reports_each_request_the_api_would_accept_as_a_loop_reports_usage() -> None:
    # Every real loop passes the API's count of each request to ``observe``; the bench's count
    # stands for it. A request over the window would be refused: it has no usage to report.
    script = hand_script(["one " * 30, "two " * 30, "three " * 30, "four " * 30])
    strategy = Listening(3)
    result = replay(strategy, script, overhead_tokens=7, window=60)
    assert strategy.told == [t for t in result.view_tokens if t <= 60]
    assert strategy.told and len(strategy.told) < len(result.view_tokens)


def test_the_default_runs_calibrated_in_the_bench_as_under_a_real_loop() -> None:
    store, summarizer = MemoryStore(ROOT), BenchSummarizer()
    strategy = build("default", Setup(12_500, store, summarizer, 2_000))
    replay(strategy, synthetic_session(3), store=store, root=ROOT, overhead_tokens=2_000)
    engine = strategy.engine
    assert isinstance(engine, SessionEngine) and engine.session.state.calibrated


def test_reach_follows_issued_references_and_compares_non_ascii_text_as_written() -> None:
    store = MemoryStore(ROOT)
    kept, archived, dropped = "café ✓ kept", "naïve archived", "gone"
    path = store.save_blob(archived)
    view = [{"role": "user", "content": f"{kept} see {path}"}]
    forged = [{"role": "user", "content": f"{ROOT}/.task_outputs/tool-results/forged.txt"}]
    assert reach(view, store, ROOT, [kept, archived, dropped]).lost == 1
    r = reach(view, store, ROOT, [kept, archived, dropped])
    assert (r.in_view, r.recoverable, r.lost) == (1, 1, 1)
    assert reach(forged, store, ROOT, [archived]).lost == 1


# -- the peers, as published ----------------------------------------------------------------


def history(results: list[str]) -> list[dict[str, Any]]:
    return hand_script(results).messages


def test_masking_keeps_the_last_ten_observations_and_masks_older_ones_with_line_counts() -> None:
    messages = history([f"line\n{i}\n" for i in range(12)])
    view = ObservationMasking().prepare(messages, "r")
    contents = [
        b["content"]
        for m in view
        for b in m["content"]
        if isinstance(m["content"], list) and b.get("type") == "tool_result"
    ]
    assert contents[:2] == ["Old environment output: (2 lines omitted)"] * 2
    assert contents[2:] == [f"line\n{i}\n" for i in range(2, 12)]
    assert check(view) == []


def test_anthropic_clearing_waits_for_the_trigger_then_keeps_the_three_newest_tool_uses() -> None:
    messages = history(["r" * 4_000 for _ in range(6)])
    full = TokenCounter().messages(messages)
    assert ToolResultClearing(trigger=full + 1).prepare(messages, "r") == messages
    view = ToolResultClearing(trigger=full - 1).prepare(messages, "r")
    contents = [
        b["content"]
        for m in view
        for b in m["content"]
        if isinstance(m["content"], list) and b.get("type") == "tool_result"
    ]
    assert contents == [PLACEHOLDER] * 3 + ["r" * 4_000] * 3
    assert (
        ToolResultClearing(trigger=full - 1, clear_at_least=10**6).prepare(messages, "r")
        == messages
    )


def test_openhands_condenses_to_half_keeping_the_first_events_and_one_summary() -> None:
    summarizer = BenchSummarizer()
    condenser = SummarizingCondenser(summarizer, max_size=20, keep_first=4)
    messages = history([f"out {i}" for i in range(12)])  # 1 + 12 * 2 = 25 events
    view = condenser.prepare(messages, "r")
    assert summarizer.calls == 1
    assert check(view) == []
    assert len(condenser.events()) <= 10
    assert view[0] == messages[0] and view[1] == messages[1] and view[2] == messages[2]
    assert "<CONDENSED_HISTORY_SUMMARY>" in view[3]["content"]
    assert view[-1] == messages[-1]


def test_codex_replaces_history_with_recent_user_messages_and_a_summary() -> None:
    summarizer = BenchSummarizer()
    messages = history(["x" * 8_000 for _ in range(4)])
    compactor = AutoCompact(summarizer, limit=2_000)
    view = compactor.prepare(messages, "do the thing")
    assert summarizer.calls == 1
    assert view[0] == {"role": "user", "content": "do the thing"}
    assert len(view) == 2 and view[1]["content"].startswith(SUMMARY_PREFIX)
    assert check(view) == []


def test_codex_truncates_tool_outputs_when_it_records_them() -> None:
    messages = history(["a" * 30_000])
    view = AutoCompact(BenchSummarizer(), limit=10**6).prepare(messages, "r")
    text = view[2]["content"][0]["content"]
    assert len(text) < 10_100 and "bytes truncated" in text


# -- scripts ---------------------------------------------------------------------------------


def test_a_synthetic_workload_becomes_a_script_with_its_planted_facts_as_needles() -> None:
    workload = synthetic_session(5, seed=1)
    script = from_workload(workload)
    assert script.turns == 5 and script.needles == tuple(workload.facts)
    assert script.pattern is not None and all(script.pattern.fullmatch(f) for f in script.needles)


@dataclass
class FakeSession:
    name: str
    format: str
    system: str | None
    messages: list[dict[str, Any]]


def test_a_recorded_session_is_replayed_one_assistant_turn_at_a_time() -> None:
    messages = [
        {"role": "user", "content": "first request"},
        *tool_turn(0, "out 0"),
        {"role": "assistant", "content": [{"type": "text", "text": "what next?"}]},
        {"role": "user", "content": [{"type": "text", "text": "second request"}]},
        *tool_turn(1, "out 1"),
    ]
    script = from_session(FakeSession("s", "openai_chat", "be brief", messages))
    assert [len(step) for step in script.steps] == [2, 2, 2]
    assert script.requests == ("first request", "first request", "second request", "second request")
    assert script.needles == ("out 0", "out 1") and script.system == "be brief"
    assert script.messages == messages


def corrected_script(turns: int = 120) -> Script:
    """A synthetic session in which the user types a correction every 15 turns."""
    base = from_workload(synthetic_session(turns, seed=7))
    steps, requests = [], [base.requests[0]]
    for i, step in enumerate(base.steps):
        note = f"Correction {i}: keep the parser's public API unchanged, case {i}."
        steps.append((*step, {"role": "user", "content": note}) if i % 15 == 14 else step)
        requests.append(note if i % 15 == 14 else requests[-1])
    return Script("corrected", base.head, tuple(steps), tuple(requests), base.needles)


def test_the_bench_counts_the_user_messages_each_strategy_keeps_in_view() -> None:
    script = corrected_script()
    typed = 1 + sum(1 for i in range(120) if i % 15 == 14)
    default, openhands = run("default", script, 6_000), run("openhands-summarizer", script, 6_000)
    assert default.user_messages == openhands.user_messages == typed
    # Ours pins them all; OpenHands' condenser keeps its first events and summarizes the rest.
    assert default.user_kept == typed
    assert openhands.summary_calls > 0 and openhands.user_kept < typed


def test_the_bench_reports_summary_retention_of_the_summaries_made() -> None:
    script = corrected_script()
    default, masking = run("default", script, 6_000), run("masking", script, 6_000)
    assert masking.summary_calls == 0 and masking.summary_retention is None
    assert default.summary_calls > 0 and default.summary_retention is not None
    assert 0 < default.summary_retention <= 1


def test_a_cached_chunk_of_classes_this_version_lacks_is_generated_again(tmp_path: Path) -> None:
    # A chunk another checkout cached, naming a module this one does not have (as the bench's
    # workload module once was): generated again, not a ModuleNotFoundError.
    chunks = Chunks(str(tmp_path), 5)
    chunks._path(0).write_bytes(zlib.compress(b"cno_such_module_of_context_compact\nTurn\n."))
    assert list(chunks.turns(5)) == list(synthetic_session(5, seed=0).turns)
