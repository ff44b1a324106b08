"""``keys.Recognizer``: which leading items of the caller's list are known, and from which
remembered list (the view, the last input, the log by its chain id)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from context_compact.invariants import InvalidHistory
from context_compact.keys import ROOT, Known, Match, Recognizer, chain_id, content_key


def _messages(n: int, tag: str = "m") -> list[dict[str, Any]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"{tag}{i}"} for i in range(n)
    ]


def _chain(messages: list[dict[str, Any]]) -> str:
    head = ROOT
    for message in messages:
        head = chain_id(head, content_key(message))
    return head


def test_the_view_handed_back_is_known_by_identity_without_hashing_it() -> None:
    view = _messages(6)
    recognizer = Recognizer()
    recognizer.remember_view(view)
    recognizer.look([*view, {"role": "user", "content": "new"}])
    assert recognizer.prefix(recognizer.view) == 6
    assert recognizer.view.keys == [None] * 6
    assert recognizer.items.keys[:6] == [None] * 6


def test_a_copy_of_the_view_is_known_by_content() -> None:
    view = _messages(4)
    recognizer = Recognizer()
    recognizer.remember_view(view)
    recognizer.look(copy.deepcopy(view))
    assert recognizer.repeats(recognizer.view)


def test_a_list_that_differs_is_known_up_to_its_first_difference() -> None:
    view = _messages(5)
    changed = copy.deepcopy(view)
    changed[3]["content"] = "edited"
    recognizer = Recognizer()
    recognizer.remember_view(view)
    recognizer.look(changed)
    assert recognizer.prefix(recognizer.view) == 3
    assert not recognizer.repeats(recognizer.view)


def test_a_key_of_an_object_the_view_held_at_that_place_is_the_views_own() -> None:
    view = _messages(2)
    new = {"role": "user", "content": "new"}
    recognizer = Recognizer()
    recognizer.remember_view(view, ["given-0", "given-1"])
    recognizer.look([*view, new])
    assert recognizer.keys() == ["given-0", "given-1", content_key(new)]


def test_the_engine_matches_the_view_then_the_last_input_then_the_log() -> None:
    log = _messages(8)
    view = log[4:]
    view_keys = [content_key(m) for m in view]
    recognizer = Recognizer()
    recognizer.remember_view(view, view_keys)

    extended = [*view, {"role": "user", "content": "next"}]
    assert recognizer.match(extended, view_keys, 8, _chain(log)) == Match(4, "view")
    recognizer.accept()

    retried = [*copy.deepcopy(extended), {"role": "assistant", "content": "more"}]
    assert recognizer.match(retried, ["other"], 8, _chain(log)) == Match(5, "input")

    own = [*copy.deepcopy(log), {"role": "user", "content": "mine"}]
    assert recognizer.match(own, ["other"], 8, _chain(log)) == Match(8, "log")

    assert recognizer.match(_messages(9, "x"), ["other"], 8, _chain(log)) is None


def test_a_view_changed_since_it_was_remembered_is_matched_by_its_keys_now() -> None:
    view = _messages(3)
    recognizer = Recognizer()
    recognizer.remember_view(view, [content_key(m) for m in view])
    # The engine's view changed at its head after it was handed out (a call returning none).
    replaced = {"role": "user", "content": "a summary"}
    now = [content_key(replaced), *(content_key(m) for m in view[1:])]
    assert recognizer.match([*view], now, 0, ROOT) is None
    assert recognizer.match([replaced, *view[1:]], now, 0, ROOT) == Match(3, "view")


def test_a_remembered_list_hashes_each_item_once_when_first_asked() -> None:
    items = _messages(3)
    known = Known(items)
    assert known.keys == [None, None, None]
    assert known.key(1) == content_key(items[1])
    assert known.keys == [None, content_key(items[1]), None]


def test_a_list_accepted_keyed_is_not_taken_for_a_copy_of_it_edited_in_place_since() -> None:
    given = _messages(3)
    recognizer = Recognizer()
    assert recognizer.match(given, [], 0, ROOT) == Match(0, "view")
    recognizer.keys()
    recognizer.accept(keyed=True)
    recognizer.remember_view(_messages(2, "v"), ["v0", "v1"])
    retried = [*given, {"role": "user", "content": "again"}]
    assert recognizer.match(retried, ["v0", "v1"], 0, ROOT) == Match(3, "input")
    recognizer.keys(3)
    recognizer.accept(keyed=True)
    given[1]["content"] = "edited after it was logged"
    assert recognizer.match(copy.deepcopy(retried), ["v0", "v1"], 0, ROOT) is None


def test_a_list_the_edge_refused_is_not_remembered_as_the_last_input() -> None:
    from context_compact.formats import CONVERTERS, openai_chat
    from context_compact.formats.edge import Edge

    def chat(*texts: str) -> list[Any]:
        return [
            {"role": "user" if i % 2 == 0 else "assistant", "content": t}
            for i, t in enumerate(texts)
        ]

    edge = Edge(CONVERTERS[openai_chat.NAME])
    edge.dump(edge.load(chat("a", "b", "c")))  # the view handed out
    # Another conversation, refused for its last item: its head is not what was converted.
    refused = [*chat("x", "y", "z"), 42]
    with pytest.raises(InvalidHistory):
        edge.load(refused)
    fixed = [*refused[:3], {"role": "assistant", "content": "w"}]
    assert edge.load(fixed) == Edge(CONVERTERS[openai_chat.NAME]).load(fixed)


def test_a_message_fixed_in_place_after_a_refusal_is_keyed_as_fixed() -> None:
    from context_compact import Compactor, MemoryStore, Policy
    from histories import call, results, user

    c = Compactor(Policy.default(context_limit=50_000), MemoryStore())
    view = c.prepare([user("fix the test")], "fix the test")
    answer = results(("t1", "ok"))
    answer["content"][0]["tool_use_id"] = 7  # refused: not a string
    view += [call("t1"), answer]
    with pytest.raises(InvalidHistory):
        c.prepare(view, "fix the test")
    answer["content"][0]["tool_use_id"] = "t1"  # fixed in place, the same list retried
    view = c.prepare(view, "fix the test")
    # The caller's own copy of the history, one turn on: the same conversation, not a new one.
    c.prepare([*copy.deepcopy(view), call("t2"), results(("t2", "ok"))], "fix the test")
    assert [e.stage for e in c.events if e.stage == "session_restart"] == []
