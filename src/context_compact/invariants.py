"""What a valid history is, defined once.

``check(messages)`` returns every violation it finds; an empty list means the history can
be sent to the Messages API as far as compaction is concerned. The rules:

* ``malformed``: a message that is not a dict, has an unknown role, content that is
  neither a string nor a list, a block that is not a dict, a tool block without its id, or
  a ``tool_result`` whose ``content`` (when it has one) is neither a string nor a list of
  blocks (dicts).
* ``orphan_result``: a ``tool_result`` whose ``tool_use_id`` is not a ``tool_use`` of the
  previous message (which must be an assistant message).
* ``unanswered_use``: a ``tool_use`` not answered by a ``tool_result`` in the next message,
  unless its message is the last one (the model is still waiting for it).
* ``duplicate_id``: the same ``tool_use`` id twice in the history.
* ``duplicate_result``: two ``tool_result`` blocks for one id in one message (the API
  refuses them).
* ``unserializable``: a value JSON cannot hold as it is (``bytes``, a ``datetime``, a
  ``set``, any other object; a dict key that is not a string; an int of more digits than
  Python writes or reads as text, ``MAX_INT_DIGITS``), anywhere in the message.
* ``too_deep``: lists and dicts nested more than ``MAX_DEPTH`` levels (a tool input 2,000
  deep would overflow every recursive reader: the JSON encoder, copies, the journal).

The last two are checked before anything is hashed or journaled: a message the journal
cannot write back exactly is never half logged. The detail names the path inside the
message (``content[1].input.when``). They do not hide the message's shape: a message whose
shape is right but that holds such a value still answers its tool calls, so the value is
what is reported, where it is, not the call before it as unanswered.

Roles are not required to alternate: the APIs merge consecutive same-role messages, and the
seed's own markers create them. ``InvalidHistory`` is what the stages raise on bad input;
they never repair it silently.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from functools import cache
from typing import Any

from .errors import InvalidHistory as InvalidHistory  # raised by check's callers
from .errors import Violation as Violation
from .messages import Message, block_type, opens_with_thinking, turn_opener, turn_start

ROLES = ("user", "assistant")
MAX_DEPTH = 100
MAX_INT_DIGITS = 4_300
"""Python's default limit on the digits of an int written or read as text (JSON is text):
past it ``json.dumps`` and ``json.loads`` raise. Lower when the process set a lower one."""
_SCALARS = (str, int, float, type(None))
# Below this many bits an int has fewer digits than any limit Python allows (640 at least).
_SURE_BITS = 2_000


@cache
def _ceiling(digits: int) -> int:
    ceiling: int = 10**digits
    return ceiling


def int_digits_allowed() -> int:
    limit = sys.get_int_max_str_digits()
    return min(limit, MAX_INT_DIGITS) if limit else MAX_INT_DIGITS


def _fits(number: int) -> bool:
    """Whether JSON can carry ``number`` there and back (its digits within the limit)."""
    return number.bit_length() < _SURE_BITS or abs(number) < _ceiling(int_digits_allowed())


def _where(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path[:6]:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    if len(path) > 6:
        out += f"… ({len(path)} levels)"
    return out or "the message"


# The common leaves, by exact type: a walk of a clean message compares types, nothing else.
# Not int: an int's size is looked at (``_fits``).
_LEAVES = frozenset((str, float, bool, type(None)))


def _clean(item: Any, depth: int) -> bool:
    """Whether ``not_json`` finds nothing in ``item`` at ``depth`` levels down: the same
    rules without the paths, so a clean history costs a walk and no tuples. Recursion ends
    at ``MAX_DEPTH``."""
    if type(item) is int:
        return _fits(item)
    if isinstance(item, _SCALARS):
        return True
    if depth >= MAX_DEPTH:
        return False
    if isinstance(item, dict):
        for key, value in item.items():
            if not isinstance(key, str):
                return False
            if type(value) not in _LEAVES and not _clean(value, depth + 1):
                return False
        return True
    if isinstance(item, list | tuple):
        for value in item:
            if type(value) not in _LEAVES and not _clean(value, depth + 1):
                return False
        return True
    return False


def not_json(value: Any, index: int) -> Violation | None:
    """The first place in ``value`` that strict JSON cannot hold, or that nests deeper than
    ``MAX_DEPTH``."""
    return None if _clean(value, 0) else _first_violation(value, index)


def _first_violation(value: Any, index: int) -> Violation | None:
    # An iterative walk that keeps each item's path, for the detail: depth costs no stack.
    todo: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while todo:
        item, path = todo.pop()
        if type(item) is int and not _fits(item):
            detail = (
                f"{_where(path)}: an int of more than {int_digits_allowed():,} digits, "
                "more than Python writes or reads as text: JSON cannot carry it"
            )
            return Violation(index, "unserializable", detail)
        if isinstance(item, _SCALARS):
            continue
        if len(path) >= MAX_DEPTH:
            detail = f"{_where(path)}: nested more than {MAX_DEPTH} levels"
            return Violation(index, "too_deep", detail)
        # Children are pushed last first, so the first problem reported is the first in order.
        if isinstance(item, dict):
            # A list, not next(..., None): a None key is one of the keys to report.
            bad = [key for key in item if not isinstance(key, str)]
            if bad:
                detail = f"{_where(path)}: key {bad[0]!r:.40} is not a string"
                return Violation(index, "unserializable", detail)
            todo.extend((item[key], (*path, key)) for key in reversed(item))
        elif isinstance(item, list | tuple):
            todo.extend((item[i], (*path, i)) for i in range(len(item) - 1, -1, -1))
        else:
            detail = (
                f"{_where(path)}: {type(item).__name__} is not JSON (str, number, bool, "
                "None, list or dict)"
            )
            return Violation(index, "unserializable", detail)
    return None


_NO_IDS: tuple[list[str], list[str]] = ([], [])


def _shape(index: int, message: Any) -> tuple[Violation | None, list[str], list[str]]:
    """The first thing wrong with the message's shape (role, content, blocks, tool ids), and
    when there is none its tool_use ids and tool_result ids, in order (read in the same
    pass: the pairing rules use them)."""
    if not isinstance(message, dict):
        return Violation(
            index, "malformed", f"expected a dict, got {type(message).__name__}"
        ), *_NO_IDS
    role = message.get("role")
    if role not in ROLES:
        return Violation(index, "malformed", f"unknown role {role!r}"), *_NO_IDS
    content = message.get("content")
    if isinstance(content, str):
        return None, *_NO_IDS
    if not isinstance(content, list):
        bad = f"content must be a str or a list, got {type(content).__name__}"
        return Violation(index, "malformed", bad), *_NO_IDS
    uses: list[str] = []
    results: list[str] = []
    for bi, block in enumerate(content):
        if not isinstance(block, dict):
            bad = f"block {bi}: expected a dict, got {type(block).__name__}"
            return Violation(index, "malformed", bad), *_NO_IDS
        kind = block.get("type")
        if kind == "tool_use":
            use_id = block.get("id")
            if not isinstance(use_id, str):
                bad = f"block {bi}: tool_use without a string id"
                return Violation(index, "malformed", bad), *_NO_IDS
            uses.append(use_id)
        elif kind == "tool_result":
            result_id = block.get("tool_use_id")
            if not isinstance(result_id, str):
                bad = f"block {bi}: tool_result without tool_use_id"
                return Violation(index, "malformed", bad), *_NO_IDS
            results.append(result_id)
    return None, uses, results


def _contents(index: int, message: dict[str, Any]) -> Violation | None:
    """The first tool_result whose content is not a string or a list of blocks: wrong, but
    it does not unmake the pair (its tool_use_id still answers the call)."""
    for bi, block in enumerate(message["content"] if isinstance(message["content"], list) else []):
        if block_type(block) == "tool_result" and "content" in block:
            bad = _result_content(block["content"])
            if bad is not None:
                return Violation(index, "malformed", f"content[{bi}].content{bad}")
    return None


def _result_content(content: Any) -> str | None:
    """What is wrong with a tool_result's content (after its path), or None."""
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return (
            ": a tool_result's content must be a str or a list of blocks, "
            f"got {type(content).__name__}"
        )
    for i, part in enumerate(content):
        if not isinstance(part, dict):
            return f"[{i}]: expected a block (a dict), got {type(part).__name__}"
    return None


def check(messages: Any) -> list[Violation]:
    """Every violation of the history rules, in message order; empty when valid."""
    if not isinstance(messages, list):
        return [Violation(-1, "malformed", f"expected a list, got {type(messages).__name__}")]
    return _check(messages, 0)


def _check(messages: list[Any], checked: int) -> list[Violation]:
    """``check``, the values of the first ``checked`` messages taken as checked already:
    only their shape is read again (the pairing rules need it), not walked."""
    found: list[Violation] = []
    # Per message: its tool_use and tool_result ids when well formed with a list of blocks.
    ids: list[tuple[list[str], list[str]] | None] = []
    for i, message in enumerate(messages):
        bad, uses, results = _shape(i, message)
        if bad:
            found.append(bad)
            ids.append(None)
            continue
        if i >= checked:
            # Neither a value JSON cannot hold nor a result's bad content unmakes the pairs:
            # the message's shape stays readable, and the pairing below uses it.
            inner = not_json(message, i) or (_contents(i, message) if results else None)
            if inner:
                found.append(inner)
        ids.append((uses, results) if isinstance(message["content"], list) else None)
    seen_ids: set[str] = set()
    last = len(messages) - 1
    for i, pair in enumerate(ids):
        if pair is None:
            continue
        uses, results = pair
        role = messages[i]["role"]
        if uses and role != "assistant":
            found.append(Violation(i, "malformed", "tool_use in a user message"))
        if results and role != "user":
            found.append(Violation(i, "malformed", "tool_result in an assistant message"))
        for use_id in uses:
            if use_id in seen_ids:
                found.append(Violation(i, "duplicate_id", f"tool_use id {use_id!r} repeats"))
            seen_ids.add(use_id)
        if results:
            if len(set(results)) < len(results):
                for rid in sorted({r for r in results if results.count(r) > 1}):
                    detail = f"two tool_result blocks for {rid!r}"
                    found.append(Violation(i, "duplicate_result", detail))
            before = ids[i - 1] if i > 0 else None
            prev_uses: set[str] = set()
            if before is not None and messages[i - 1]["role"] == "assistant":
                prev_uses = set(before[0])
            for rid in results:
                if rid not in prev_uses:
                    found.append(
                        Violation(
                            i,
                            "orphan_result",
                            f"tool_result {rid!r} has no tool_use in the previous message",
                        )
                    )
        if uses and role == "assistant" and i < last:
            after = ids[i + 1]
            answered: set[str] = set()
            if after is not None and messages[i + 1]["role"] == "user":
                answered = set(after[1])
            for use_id in uses:
                if use_id not in answered:
                    found.append(
                        Violation(
                            i,
                            "unanswered_use",
                            f"tool_use {use_id!r} is not answered in the next message",
                        )
                    )
    found.sort(key=lambda v: v.index)
    return found


def check_appended(prev: Any, new: list[Any], seen_ids: set[str]) -> list[Violation]:
    """``check`` of ``new`` appended after ``prev`` (a message already checked, or None) in a
    history whose tool_use ids are ``seen_ids``: O(len(new)), whatever came before.

    Indices count from the first new message; a violation of ``prev`` (its tool_use left
    unanswered by what follows) has index -1.
    """
    head = [prev] if prev is not None else []
    found = []
    for v in _check(head + new, len(head)):
        if head and v.index == 0 and v.rule != "unanswered_use":
            continue
        found.append(replace(v, index=v.index - len(head)))
    for i, message in enumerate(new):
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            for block in message["content"]:
                use_id = block.get("id") if block_type(block) == "tool_use" else None
                if isinstance(use_id, str) and use_id in seen_ids:
                    detail = f"tool_use id {block['id']!r} repeats"
                    found.append(Violation(i, "duplicate_id", detail))
    return sorted(dict.fromkeys(found), key=lambda v: v.index)


def thinking_kept(before: list[Message], after: list[Message]) -> bool:
    """Whether a compaction kept the API's thinking rule: when the turn in progress of
    ``before`` opens with a (redacted) thinking block, the turn in progress of ``after`` opens
    with one too, or holds no assistant message at all (everything of it was summarized).

    Not part of ``check``: a history whose turn does not think is valid (thinking may be
    off); only a compaction can break a turn that did.
    """
    opener = turn_opener(before)
    if opener is None or not opens_with_thinking(opener):
        return True
    kept = turn_opener(after)
    return kept is None or opens_with_thinking(kept)


def thinking_start(messages: list[Message], start: int, before: list[Message]) -> int:
    """Where a kept tail ``messages[start:]`` may start, once ``before`` (a marker, a summary,
    a kept head) is put in front of it, so that ``thinking_kept`` holds: ``start`` itself, or
    the nearest assistant message before it that keeps the turn in progress opening with its
    thinking block (0 when none does). Only assistant messages are tried: a cut just before
    one never splits a tool pair of a valid history.

    The API merges consecutive user messages, so ``before`` matters: a head that ends with
    tool results, a marker and the latest request form one run that holds results, which
    does not end a turn. A tail that starts before the run of user messages that opened the
    turn in progress keeps that run whole, and with it the turn's own opening; otherwise only
    the messages up to the tail's first assistant message decide (inside the turn no run of
    user messages lacks results), so each try costs O(len(before)).
    """
    first = turn_start(messages)
    opener = next(
        (i for i in range(first, len(messages)) if messages[i].get("role") == "assistant"), None
    )
    if opener is None or not opens_with_thinking(messages[opener]):
        return start
    run = first
    while run > 0 and messages[run - 1].get("role") == "user":
        run -= 1

    def keeps(s: int) -> bool:
        if s < run:
            return True
        stop = next(
            (i for i in range(s, len(messages)) if messages[i].get("role") == "assistant"),
            len(messages) - 1,
        )
        kept = turn_opener([*before, *messages[s : stop + 1]])
        return kept is None or opens_with_thinking(kept)

    if keeps(start):
        return start
    for s in range(start - 1, -1, -1):
        if messages[s].get("role") == "assistant" and keeps(s):
            return s
    return 0


def ensure_valid(messages: Any, where: str = "messages") -> None:
    """Raise ``InvalidHistory`` naming the first bad message, or return quietly."""
    violations = check(messages)
    if violations:
        raise InvalidHistory(violations, where)
