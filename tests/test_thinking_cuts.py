"""The turn in progress keeps its opening thinking block through the seed's cuts (issue 10);
without thinking blocks the cuts are exactly the seed's (S-2, S-5.1)."""

from __future__ import annotations

from typing import Any

from context_compact import Compactor, MemoryStore, Policy, check
from context_compact.invariants import thinking_kept
from context_compact.seed.snip import snip_cuts
from context_compact.seed.summary import reactive_cut
from histories import call, results, user

DONE = {"role": "assistant", "content": [{"type": "text", "text": "done"}]}
THINK = {"type": "thinking", "thinking": "plan", "signature": "sig"}


def tool_loop(start: int, steps: int, think: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for k in range(steps):
        message = call(f"t{start + k}")
        if think and k == 0:
            message = {**message, "content": [THINK, *message["content"]]}
        out += [message, results((f"t{start + k}", "ok"))]
    return out


def test_reactive_keeps_the_turn_from_its_thinking_block() -> None:
    history = [user("go"), *tool_loop(0, 6, think=True)]
    cut = reactive_cut(history, 5)
    assert cut == 1 and history[cut]["content"][0] == THINK


def test_reactive_cut_is_the_seeds_without_thinking() -> None:
    history = [user("go"), *tool_loop(0, 6, think=False)]
    assert reactive_cut(history, 5) == len(history) - 6  # moved back one over the pair (S-5.1)


def test_snip_still_cuts_a_single_thinking_task_whose_head_holds_the_opener() -> None:
    # The head keeps the opener and ends with results: with the marker they form one user
    # run that holds results, so the turn still opens with its thinking block.
    history = [user("go"), *tool_loop(0, 40, think=True)]
    head, tail = snip_cuts(history, 50, 3)
    assert (head, tail) == snip_cuts([user("go"), *tool_loop(0, 40, think=False)], 50, 3)
    marker = {"role": "user", "content": "[archived]"}
    assert thinking_kept(history, [*history[:head], marker, *history[tail:]])


def test_snip_moves_the_tail_back_to_a_later_requests_thinking_block() -> None:
    history = [
        user("first"),
        *tool_loop(0, 20, think=False),
        DONE,
        user("second"),
        *tool_loop(100, 20, think=True),
    ]
    head, tail = snip_cuts(history, 50, 3)
    marker = {"role": "user", "content": "[archived]"}
    assert thinking_kept(history, [*history[:head], marker, *history[tail:]])
    assert len(history) - tail > 47


def test_seed_reactive_compact_sends_a_turn_that_opens_with_thinking() -> None:
    history = [
        user("first"),
        *tool_loop(0, 3, False),
        DONE,
        user("second"),
        *tool_loop(10, 8, True),
    ]
    c = Compactor(Policy.seed(echo=False), MemoryStore(), lambda m: "summary")
    view = c.reactive_compact(history, "second")
    assert check(view) == [] and thinking_kept(history, view)
    assert view[1]["content"][0] == THINK
