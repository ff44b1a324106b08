"""The policy's knobs that peers have, each one pure check that a pass or the engine asks.

- ``exclude_tools``, ``keep_recent_tool_uses``: which seen results the clear pass may take
  (``clearable``; Anthropic's ``clear_tool_uses``, LangChain's ``ClearToolUsesEdit``);
- ``clear_placeholder``: the text of a cleared result (``cleared_text``), which still names
  the file holding it;
- ``clear_tool_inputs``: which cleared results' calls lose their input too, and the copy of
  those inputs (``cleared_inputs``: one JSONL file per clearing, a line per call, each
  placeholder naming its line);
- ``trigger_messages`` and the caller's ``should_compact`` hook: whether ``prepare`` compacts
  now, and down to what (``trigger``).

Under the limit's pressure (``force``: a refusal, a last resort) only ``exclude_tools``
holds: a request over the window is refused, so keeping N recent results must yield.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .. import markers
from ..messages import ToolUseBlock, block_type, blocks, is_tool_use, result_at, use_at
from ..store.base import Store
from .policy import SessionPolicy
from .records import InputCopy
from .state import Pos, SessionState


@dataclass(frozen=True)
class CompactionCheck:
    """What a ``should_compact`` hook is asked about: the request as it would be sent."""

    tokens: int
    """The request's size (calibrated estimate, system prompt and tools included)."""
    limit: int
    """The policy's ``context_limit``."""
    messages: int
    """Messages in the view."""
    policy_says: bool
    """Whether the policy alone would compact now (``high_water``, ``trigger_messages``)."""


ShouldCompact = Callable[[CompactionCheck], "bool | None"]


def tool_name(state: SessionState, pos: Pos) -> str | None:
    """The name of the tool whose result is at ``pos`` (its call is in the message before)."""
    seq, index = pos
    use_id = result_at(state.msgs[seq], index).get("tool_use_id")
    if seq - 1 not in state.msgs:
        return None
    for block in blocks(state.msgs[seq - 1]):
        if is_tool_use(block) and block.get("id") == use_id:
            name = block.get("name")
            return name if isinstance(name, str) else None
    return None


def protected(state: SessionState, policy: SessionPolicy, force: bool) -> Callable[[Pos], bool]:
    """A predicate: the result at ``pos`` must stay (see the module docstring)."""
    recent: set[Pos] = set()
    if policy.keep_recent_tool_uses and not force:
        results = state.results(state.first_kept, state.n)
        recent = {pos for pos, _ in results[-policy.keep_recent_tool_uses :]}
    excluded = set(policy.exclude_tools)

    def keep(pos: Pos) -> bool:
        return pos in recent or (bool(excluded) and tool_name(state, pos) in excluded)

    return keep


def cleared_text(
    policy: SessionPolicy, path: str, chars: int, lines: tuple[int, int] | None
) -> str:
    if policy.clear_placeholder is None:
        return markers.cleared_marker(path, chars, lines)
    where = f"{path} lines {lines[0]}-{lines[1]}" if lines else path
    return policy.clear_placeholder.format(path=path, chars=f"{chars:,}", where=where)


def tool_use_of(state: SessionState, pos: Pos) -> Pos | None:
    """Where the call answered by the result at ``pos`` is (in the message before)."""
    seq, index = pos
    use_id = result_at(state.msgs[seq], index).get("tool_use_id")
    if seq - 1 not in state.msgs:
        return None
    for bi, block in enumerate(blocks(state.msgs[seq - 1])):
        if block_type(block) == "tool_use" and block.get("id") == use_id:
            return seq - 1, bi
    return None


def cleared_inputs(
    state: SessionState, policy: SessionPolicy, store: Store, results: Sequence[Pos]
) -> tuple[tuple[InputCopy, ...], list[str]]:
    """The inputs to clear with the results at ``results`` (``clear_tool_inputs``), written
    first to one JSONL file: the edit's ``inputs`` and the session index's lines."""
    wanted = policy.clear_tool_inputs
    if wanted is False:
        return (), []
    calls: list[tuple[Pos, ToolUseBlock]] = []
    for pos in results:
        at = tool_use_of(state, pos)
        if at is None or at in state.replaced.cleared_inputs:
            continue
        use = use_at(state.msgs[at[0]], at[1])
        if not isinstance(use.get("input"), dict) or not use["input"]:
            continue  # nothing to clear (an empty input is its own placeholder)
        if wanted is not True and use.get("name") not in wanted:
            continue
        calls.append((at, use))
    if not calls:
        return (), []
    # ASCII JSON: no line break of any kind inside a line, so line numbers hold.
    lines = [
        json.dumps({"id": u.get("id"), "name": u.get("name"), "input": u["input"]}) + "\n"
        for _, u in calls
    ]
    path = store.save_pack(lines)
    rows, index = [], []
    for number, (at, use) in enumerate(calls, start=1):
        chars = len(json.dumps(use["input"]))
        rows.append(InputCopy(at[0], at[1], path, markers.cleared_input(path, chars, number)))
        what = f"input of {use.get('name')} call {use.get('id')}"
        index.append(markers.index_line("input", f"{path} lines {number}-{number}", what))
    return tuple(rows), index


UNCALIBRATED_HIGH_WATER = 0.85
"""The high-water mark before the API has counted a request of the session (no ``observe``
yet): the estimate alone can be 10-20% under a tokenizer it does not know, and a request
sent at ``high_water`` = 0.97 of the limit would then be refused. Once the API's count
anchors the view's head, only what came after it is estimated and the policy's own mark
holds."""


def high_water(state: SessionState, policy: SessionPolicy) -> float:
    """The high-water mark in force: the policy's, capped until the API's counts arrive."""
    if not state.calibrated:
        return min(policy.high_water, UNCALIBRATED_HIGH_WATER)
    return policy.high_water


def trigger(
    state: SessionState, policy: SessionPolicy, limit: int, hook: ShouldCompact | None
) -> tuple[bool, int]:
    """Whether to compact now, and the size to compact down to. A hook's True compacts as
    at the high-water mark, its False holds off while the request still fits the limit, its
    None leaves the decision to the policy."""
    tokens = state.measure()
    by_messages = policy.trigger_messages is not None and len(state.view) > policy.trigger_messages
    high = high_water(state, policy) * limit
    fire = tokens > high or by_messages
    target = int(policy.low_water * limit)
    if by_messages and tokens <= high:
        target = 0  # a count has no token target: all but the newest turns are summarized
    if hook is not None:
        answer = hook(CompactionCheck(tokens, limit, len(state.view), fire))
        if answer is not None:
            fire = bool(answer) or tokens > limit
    return fire, target


__all__ = [
    "CompactionCheck",
    "ShouldCompact",
    "cleared_inputs",
    "cleared_text",
    "high_water",
    "protected",
    "tool_name",
    "tool_use_of",
    "trigger",
]
