"""Preserved thinking: on a model that binds each thinking block to its prefix, no view we
hand out sends a block whose prefix changed, and none drops a block whose prefix did not.

The model here signs its thinking as the API does (``api_binding``: a hash of everything
before the block in the request that produced it); every request is checked with the API's
rule, and the laws are searched by hypothesis over tool loops and chats at small windows,
where compaction comes every few steps.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import api_binding
from api_rules import thinking_request, violation_text
from context_compact import Compactor, MemoryStore, Policy, check
from context_compact.markers import THINKING_REMOVED
from context_compact.session.records import Setting, Strip, as_json, read
from context_compact.session.thinking import change_point, checks_prefix, without_thinking
from context_compact.testing.fakes import BenchSummarizer

THINKING_TYPES = ("thinking", "redacted_thinking")


def _reply(view: list[dict[str, Any]], step: int, ends_turn: bool) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "thinking", "thinking": f"Plan {step}."}]
    if ends_turn:
        content.append({"type": "text", "text": f"Part {step} is done."})
    else:
        content.append(
            {
                "type": "tool_use",
                "id": f"toolu_{step:04d}",
                "name": "bash",
                "input": {"command": f"step {step}"},
            }
        )
    api_binding.sign_reply({"messages": view}, content)
    return {"role": "assistant", "content": content}


def _result(step: int, chars: int) -> dict[str, Any]:
    text = (f"step {step} output line\n" * (chars // 22 + 1))[:chars]
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": f"toolu_{step:04d}", "content": text}],
    }


def _thinking_at(messages: list[dict[str, Any]]) -> list[tuple[int, int, str]]:
    found = []
    for i, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, list):
            for j, block in enumerate(content):
                if block.get("type") in THINKING_TYPES:
                    found.append((i, j, json.dumps(block, sort_keys=True)))
    return found


def run_loop(
    sizes: list[int], window: int, turn_every: int | None, preserved: bool | str = True
) -> dict[str, Any]:
    """A tool loop (a new user request every ``turn_every`` steps, if given) through
    ``prepare``; every request checked against the API's rules and the laws."""
    compactor = Compactor(
        Policy.default(context_limit=window, preserved_thinking=preserved),
        MemoryStore(),
        BenchSummarizer(),
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Migrate every module."}]
    sent: list[dict[str, Any]] | None = None
    failed, removed_before_change, produced, kept = 0, 0, 0, 0
    last_block: str | None = None
    for step, chars in enumerate(sizes):
        view = compactor.prepare(messages, "Migrate every module.")
        assert check(view) == []
        assert violation_text(thinking_request(view)) is None
        if api_binding.failing({"messages": view}):
            failed += 1
        if sent is not None:
            # The view the call started from: the last one sent, and the two messages
            # appended to it (the reply, then its result or the next request).
            start = sent + messages[-2:]
            at = change_point(start, view)
            blocks_now = {b for _, _, b in _thinking_at(view)}
            for i, j, block in _thinking_at(start):
                if at is None or (i, j) < at:
                    removed_before_change += block not in blocks_now
            if last_block is not None:
                produced += 1
                kept += last_block in blocks_now
        ends = turn_every is not None and step % turn_every == turn_every - 1
        reply = _reply(view, step, ends)
        last_block = json.dumps(reply["content"][0], sort_keys=True)
        sent = view
        messages = [*view, reply]
        if ends:
            messages.append({"role": "user", "content": f"Now part {step + 1}."})
        else:
            messages.append(_result(step, chars))
    return {
        "failed": failed,
        "removed_before_change": removed_before_change,
        "kept": kept / produced if produced else 1.0,
        "compactor": compactor,
    }


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(100, 6_000), min_size=5, max_size=45),
    window=st.sampled_from([3_000, 5_000, 9_000]),
    turn_every=st.one_of(st.none(), st.integers(2, 9)),
)
def test_no_view_sends_a_block_whose_prefix_changed_nor_drops_one_whose_prefix_held(
    sizes: list[int], window: int, turn_every: int | None
) -> None:
    found = run_loop(sizes, window, turn_every)
    assert found["failed"] == 0
    assert found["removed_before_change"] == 0


@pytest.mark.parametrize("turn_every", [None, 7])
def test_most_thinking_a_request_produced_is_still_sent_by_the_next(turn_every: int | None) -> None:
    sizes = [200 + (k * 7_919) % 2_800 for k in range(150)]
    found = run_loop(sizes, 20_000, turn_every)
    assert found["failed"] == 0
    assert found["kept"] >= 0.85, found["kept"]


def test_a_model_without_the_check_is_never_stripped() -> None:
    sizes = [200 + (k * 7_919) % 4_800 for k in range(60)]
    for preserved in (False, "auto"):
        compactor = run_loop(sizes, 6_000, 5, preserved=preserved)["compactor"]
        records = list(compactor.durable.store.records(compactor.session_id))
        assert [r for r in records if r.get("kind") == "edit"]
        assert not [r for r in records if r.get("kind") in ("strip", "setting")]
        assert all(r.get("stage") != "strip_thinking" for r in records if r.get("kind") == "event")


@pytest.mark.parametrize(
    ("model", "checks"),
    [
        ("claude-fable-5-2", True),
        ("claude-haiku-5-5-20261101", True),
        ("us.anthropic.claude-sonnet-5-5-v1:0", True),
        ("claude-fable-5-1@20260901", True),
        ("claude-fable-6", True),
        ("claude-test", False),
        ("claude-opus-5", False),
        ("claude-opus-4-8", False),
        ("claude-sonnet-4-5-20250929", False),
        ("claude-3-5-sonnet-latest", False),
        ("gpt-5", False),
        (None, False),
    ],
)
def test_the_models_that_check_are_known_by_name(model: str | None, checks: bool) -> None:
    assert checks_prefix(model) is checks


def test_an_assistant_message_of_thinking_alone_keeps_a_line_of_text() -> None:
    store = MemoryStore()
    compactor = Compactor(Policy.default(preserved_thinking=True), store)
    alone = {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "x"}]}
    compactor.prepare(
        [{"role": "user", "content": "Go."}, alone, {"role": "user", "content": "Again."}], "Again."
    )
    engine = compactor.engine
    assert engine.session is not None
    engine.session.record(Strip(1, 0, "refusal"))
    view = engine.session.view()
    assert view[1]["content"] == [{"type": "text", "text": THINKING_REMOVED}]
    assert alone["content"][0]["type"] == "redacted_thinking"
    assert (
        without_thinking([{"type": "thinking", "thinking": "a"}, {"type": "text", "text": "b"}], 1)[
            0
        ]["type"]
        == "thinking"
    )


@pytest.mark.parametrize(
    "record", [Strip(3, 1, "clear_old_results"), Setting("preserved_thinking", True, "model x")]
)
def test_the_new_records_read_back_as_they_were_written(record: Any) -> None:
    assert read(as_json(record)) == record


def test_a_resumed_session_strips_as_the_one_that_stopped() -> None:
    store = MemoryStore()
    policy = Policy.default(context_limit=4_000, preserved_thinking=True)
    compactor = Compactor(policy, store, BenchSummarizer())
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Go."}]
    for step in range(40):
        view = compactor.prepare(messages, "Go.")
        messages = [*view, _reply(view, step, False), _result(step, 1_500)]
    strips = [r for r in store.records(compactor.session_id) if r.get("kind") == "strip"]
    assert strips
    resumed = Compactor(policy, store, BenchSummarizer(), session=compactor.session_id)
    assert resumed.view() == compactor.view()
    # And it goes on stripping where the stopped one would have.
    nxt = resumed.prepare(messages, "Go.")
    assert api_binding.failing({"messages": nxt}) == []


def test_an_undone_compaction_strips_what_it_brings_back_before() -> None:
    store = MemoryStore()
    policy = Policy.default(context_limit=8_000, preserved_thinking=True)
    compactor = Compactor(policy, store, BenchSummarizer())
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Go."}]
    view: list[Any] = []
    for step in range(30):
        view = compactor.prepare(messages, "Go.")
        if any(e.stage == "clear_old_results" for e in compactor.events):
            break
        messages = [*view, _reply(view, step, False), _result(step, 1_200)]
    assert any(e.stage == "clear_old_results" for e in compactor.events)
    # The clearing's view was sent and answered; then the clearing is taken back.
    messages = [*view, _reply(view, 99, False), _result(99, 100)]
    compactor.prepare(messages, "Go.")
    undone = compactor.undo()
    assert api_binding.failing({"messages": undone}) == []
    assert violation_text(thinking_request(undone)) is None
    assert check(undone) == []


def test_a_session_resumed_from_a_checkpoint_mid_turn_goes_on_without_a_voided_block() -> None:
    store = MemoryStore()
    policy = Policy.default(context_limit=6_000, preserved_thinking=True, summarize_ahead=True)
    compactor = Compactor(policy, store, BenchSummarizer())
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Go."}]
    for step in range(90):
        view = compactor.prepare(messages, "Go.")
        ends = step % 9 == 8
        messages = [*view, _reply(view, step, ends)]
        nxt = {"role": "user", "content": f"Part {step}."} if ends else _result(step, 900)
        messages.append(nxt)
    records = list(store.records(compactor.session_id))
    assert any(r.get("kind") == "checkpoint" for r in records)
    assert any(r.get("kind") == "strip" for r in records)
    resumed = Compactor(policy, store, BenchSummarizer(), session=compactor.session_id)
    for step in range(90, 120):
        view = resumed.prepare(messages, "Go.")
        assert api_binding.failing({"messages": view}) == []
        assert violation_text(thinking_request(view)) is None
        messages = [*view, _reply(view, step, False), _result(step, 900)]
