"""The native tier (``Policy.default(native=True)``) through ``compacting(anthropic.Anthropic(),
...)``, against the stub API answering on-demand compaction requests and refusing what the
API refuses (``stub_compaction``): the block first and unchanged, the same system prompt and
tools, no ``context_management`` beside ``compaction``.
"""

from __future__ import annotations

import random
from typing import Any

import anthropic
import pytest
from test_native_compaction import SYSTEM, TOOLS, WINDOW, Model, run_loop

from context_compact import Compactor, MemoryStore, Policy
from context_compact.integrations import compacting
from context_compact.messages import as_dicts
from context_compact.session.records import SummaryEdit, journal
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.reach import reach
from stub_api import StubAPI
from stub_compaction import Compactions

STEPS = 64


def summary_edits(store: MemoryStore, session: str) -> list[SummaryEdit]:
    return [r for r in journal(store.records(session)) if isinstance(r, SummaryEdit)]


def native_loop(
    native: bool | str, compactions: Compactions, steps: int = STEPS, **extra: Any
) -> dict[str, Any]:
    rng = random.Random(11)
    sizes = [rng.randint(3_000, 20_000) for _ in range(steps + 4)]
    model = Model(WINDOW, steps)
    store = MemoryStore()
    policy = Policy.default(context_limit=WINDOW, native=native)
    compactor = Compactor(policy, store, BenchSummarizer())
    with StubAPI(compactions=compactions) as stub:
        stub.enqueue(*([model] * (3 * steps)))
        client = compacting(
            anthropic.Anthropic(base_url=stub.url, api_key="test", max_retries=0), compactor
        )
        messages, sent = run_loop(client, steps, sizes, **extra)
        refusals, bodies = list(stub.refusals), stub.bodies
    return {
        "model": model,
        "messages": messages,
        "sent": sent,
        "refusals": refusals,
        "bodies": bodies,
        "store": store,
        "compactor": compactor,
    }


@pytest.mark.parametrize("steps", [STEPS, 4 * STEPS])
def test_the_sdk_tool_loop_under_the_native_tier_asks_for_compactions_and_sends_each_block_unchanged(  # noqa: E501
    steps: int,
) -> None:
    compactions = Compactions(count=Model(WINDOW, 0).count)
    run = native_loop(True, compactions, steps, betas=["compact-2026-09-04"])
    model, bodies, store = run["model"], run["bodies"], run["store"]
    compactor = run["compactor"]
    assert model.step == steps and run["messages"][-1]["content"][-1].text == "Done."
    assert max(model.sent) <= WINDOW
    assert run["refusals"] == []
    # The API was asked for compactions, with the conversation's system prompt and tools.
    asked = [i for i, b in enumerate(bodies) if isinstance(b.get("compaction"), dict)]
    assert len(asked) >= steps // STEPS and len(compactions.blocks) == len(asked)
    assert all(bodies[i]["system"] == SYSTEM and bodies[i]["tools"] == TOOLS for i in asked)
    assert all("context_management" not in bodies[i] for i in asked)
    # Every later request starts with the newest block issued, unchanged.
    ends = [*compactions.issued_at[1:], len(bodies)]
    for block, start, end in zip(compactions.blocks, compactions.issued_at, ends, strict=True):
        later = bodies[start:end]
        assert later, "a block issued and never sent"
        for body in later:
            assert body["messages"][0]["content"][0] == block
    # The user's first request stays in view, right after the block.
    view = as_dicts(compactor.view())
    assert view[1]["content"] == run["messages"][0]["content"]
    # Nothing lost: every result in view or two reads away; the first recalled.
    found = reach(view, store, store.root, run["sent"], max_reads=2)
    assert found.lost == 0, found.lost_items[:3]
    assert "step 0: src/module_0.py" in compactor.recall("module_0.py").text
    # A readable summary of ours kept beside each block, and saved where the view names it.
    session = compactor.session_id
    assert session is not None
    edits = [e for e in summary_edits(store, session) if e.block is not None]
    assert [e.block for e in edits] == compactions.blocks
    assert all(e.text and "module_" in e.text for e in edits)
    # Reopened from its journal, the session sends the same view, the block first.
    again = Compactor(Policy.default(context_limit=WINDOW, native=True), store, session=session)
    assert again.view() == compactor.view()


class Refusing(Compactions):
    """A server whose compaction requests are refused (a model without compaction)."""

    def violation(self, body: Any) -> str | None:
        if isinstance(body, dict) and body.get("compaction") is not None:
            return "compaction is not supported for this model"
        return super().violation(body)


@pytest.mark.parametrize("native", [True, "auto"])
def test_a_refused_compaction_request_falls_back_to_our_own_summary_and_says_so(
    native: bool | str,
) -> None:
    compactions = Refusing()
    run = native_loop(native, compactions, 4 * STEPS)
    model, compactor = run["model"], run["compactor"]
    assert model.step == 4 * STEPS
    assert compactions.blocks == []
    fallbacks = [e for e in compactor.events if e.stage == "native_fallback"]
    assert fallbacks and "our own summary used" in fallbacks[0].note
    asked = [b for b in run["bodies"] if b.get("compaction") is not None]
    # Every refusal was of a compaction request, and each was recovered from.
    assert len(run["refusals"]) == len(asked)
    assert any(e.stage == "summarize" for e in compactor.events)
    if native == "auto":
        assert len(asked) == 1  # refused once: the tier is off for the session
    else:
        assert len(asked) == len(fallbacks) >= 2
    found = reach(
        as_dicts(compactor.view()), run["store"], run["store"].root, run["sent"], max_reads=2
    )
    assert found.lost == 0


def test_native_must_be_true_false_or_auto() -> None:
    with pytest.raises(ValueError, match="native"):
        Policy.default(native="yes")


def test_the_streaming_helper_asks_for_compactions_with_create_and_sends_the_block_first() -> None:
    compactions = Compactions(count=Model(WINDOW, 0).count)
    rng = random.Random(5)
    sizes = [rng.randint(3_000, 20_000) for _ in range(STEPS + 4)]
    model = Model(WINDOW, STEPS)
    compactor = Compactor(Policy.default(context_limit=WINDOW, native=True), MemoryStore())
    messages: list[Any] = [{"role": "user", "content": "Migrate every module."}]
    with StubAPI(compactions=compactions) as stub:
        stub.enqueue(*([model] * (3 * STEPS)))
        client = compacting(
            anthropic.Anthropic(base_url=stub.url, api_key="test", max_retries=0), compactor
        )
        for step in range(STEPS + 1):
            with client.messages.stream(
                model="claude-test", max_tokens=1024, system=SYSTEM, tools=TOOLS, messages=messages
            ) as stream:
                response = stream.get_final_message()
            messages.append({"role": "assistant", "content": response.content})
            uses = [b for b in response.content if b.type == "tool_use"]
            if not uses:
                break
            text = f"step {step}: module_{step}.py done\n" * (sizes[step] // 30)
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": uses[0].id, "content": text}
                    ],
                }
            )
        refusals, bodies = list(stub.refusals), stub.bodies
    assert model.step == STEPS and refusals == []
    asked = [b for b in bodies if b.get("compaction") is not None]
    assert asked and all(not b.get("stream") for b in asked)
    assert compactions.blocks and bodies[-1]["messages"][0]["content"][0] == compactions.blocks[-1]


def test_native_compaction_turned_off_by_a_refusal_stays_off_for_the_resumed_session() -> None:
    """``native="auto"``: the provider refused once, so the session asks no more; a process
    that resumes the session from its journal asks no more either."""
    from test_native_compaction import result

    first = native_loop("auto", Refusing(), 4 * STEPS)
    store, session = first["store"], first["compactor"].session_id
    assert len([b for b in first["bodies"] if b.get("compaction") is not None]) == 1
    # Another process resumes the session and goes on with the caller's list.
    policy = Policy.default(context_limit=WINDOW, native="auto")
    resumed = Compactor(policy, store, BenchSummarizer(), session=session)
    messages = as_dicts(first["compactor"].view())
    model = Model(WINDOW, 2 * STEPS)
    with StubAPI(compactions=Refusing()) as stub:
        stub.enqueue(*([model] * (6 * STEPS)))
        client = compacting(
            anthropic.Anthropic(base_url=stub.url, api_key="test", max_retries=0), resumed
        )
        for step in range(2 * STEPS):
            response = client.beta.messages.create(
                model="claude-test", max_tokens=2048, system=SYSTEM, tools=TOOLS, messages=messages
            )
            messages.append({"role": "assistant", "content": response.content})
            uses = [b for b in response.content if b.type == "tool_use"]
            if not uses:
                break
            text = result(step, 12_000)
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": uses[0].id, "content": text}
                    ],
                }
            )
        bodies = stub.bodies
    assert any(e.stage == "summarize" for e in resumed.events)  # it compacted again
    assert [b for b in bodies if b.get("compaction") is not None] == []
