"""The inspector's data layer: what each request's view was, its size, events, links."""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

import pytest
from inspector_sessions import NEEDLE, REQUEST, output, tool_loop

from context_compact import MemoryStore
from context_compact.cli.compact import replay_policy
from context_compact.history.inspect import timeline
from context_compact.inspector import Inspection, Inspector, InspectorError, report
from histories import pair


def test_each_request_is_the_view_that_produced_its_answer(
    long_session: tuple[MemoryStore, str], long_inspection: Inspection
) -> None:
    store, sid = long_session
    found = long_inspection
    assert len(found.requests) == 620
    assert found.tokens() == timeline(store, sid).view_tokens
    records = [r for r in store.records(sid) if r["kind"] == "message"]
    first = found.view(1)
    assert first == [records[0]["message"]]
    # A view as sent ends with the message the answer followed.
    for request in found.requests[::97]:
        assert found.view(request.index)[-1] == records[request.answer - 1]["message"]


def test_a_view_that_does_not_open_with_the_last_one_breaks_the_cache(
    long_inspection: Inspection,
) -> None:
    found = long_inspection
    for request in found.requests[1:]:
        before, now = found.view(request.index - 1), found.view(request.index)
        assert request.cache_break == (now[: len(before)] != before)
    assert 0 < sum(r.cache_break for r in found.requests) < 620 / 2


def test_views_are_kept_as_runs_over_distinct_messages(
    long_session: tuple[MemoryStore, str], long_inspection: Inspection
) -> None:
    store, sid = long_session
    found = long_inspection
    logged = sum(1 for r in store.records(sid) if r["kind"] == "message")
    assert len(found.messages) < 2 * logged
    runs = sum(len(r.spans) for r in found.requests)
    # Under the default's cadence, ~5 runs a view of ~10 messages here (2 of ~7 before it):
    # still each distinct message kept once, views as runs over them.
    assert runs * 2 < sum(r.messages for r in found.requests)


def test_a_string_that_left_the_view_500_requests_ago_is_found_by_search(
    long_session: tuple[MemoryStore, str], long_inspection: Inspection
) -> None:
    store, _ = long_session
    found = long_inspection
    carried = [r.index for r in found.requests if NEEDLE in json.dumps(found.view(r.index))]
    assert carried and carried[-1] < len(found.requests) - 500
    page = found.search(store, NEEDLE)
    assert page["hits"] == 1 and NEEDLE in page["text"]
    assert page["messages"][0]["first_sent"] == carried[0]


def test_every_link_is_a_path_the_store_issued_and_opens_its_original(
    long_session: tuple[MemoryStore, str],
) -> None:
    store, sid = long_session
    inspector = Inspector(store, sid)
    last = inspector.answer("/api/view", {"id": sid, "request": "620"})
    assert last["links"] and all(store.issued(p) for p in last["links"])
    summary = next(m for m in last["messages"] if "Conversation summary" in str(m["content"]))
    # The summary names its archive (and may quote a cleared result's saved output too).
    archived = next(p for p in last["links"] if p in str(summary["content"]) and "/archive_" in p)
    text = inspector.answer("/api/archive", {"id": sid, "path": archived})["text"]
    assert "toolu_" in text
    with pytest.raises(InspectorError, match="not a file"):
        inspector.answer("/api/archive", {"id": sid, "path": "/etc/passwd"})


def test_two_policies_are_replayed_side_by_side_without_writing() -> None:
    small = MemoryStore()
    short = tool_loop(small, 40)
    files = dict(small.files)
    out = Inspector(small, compare=replay_policy).answer(
        "/api/compare", {"id": short, "a": "default", "b": "none", "limit": "4000"}
    )
    default, none = out["policies"]
    assert (default["policy"], none["policy"]) == ("default", "none")
    assert len(default["view_tokens"]) == len(none["view_tokens"]) == 41
    assert default["passes"] and not none["passes"]
    assert max(default["view_tokens"]) <= 4_000 < max(none["view_tokens"])
    assert small.files == files


def test_an_unknown_session_or_request_is_one_clear_error() -> None:
    store = MemoryStore()
    sid = tool_loop(store, 3)
    with pytest.raises(InspectorError, match="no session 'nope'"):
        Inspection.load(store, "nope")
    with pytest.raises(InspectorError, match="requests 1-3, not 9"):
        Inspector(store).answer("/api/view", {"id": sid, "request": "9"})
    with pytest.raises(InspectorError, match="shows session"):
        Inspector(store, sid).answer("/api/session", {"id": "other"})


def embedded(page: str) -> Any:
    """The answers a written report carries (gzipped JSON in base64)."""
    tag = '<script type="application/gzip;base64" id="cc-data">'
    start = page.index(tag) + len(tag)
    return json.loads(
        gzip.decompress(base64.b64decode(page[start : page.index("</script>", start)]))
    )


def test_the_report_embeds_every_answer_the_page_needs_and_names_nothing_outside() -> None:
    store = MemoryStore()
    sid = tool_loop(store, 30, limit=2_000)
    page = report(store, sid, replay=replay_policy)
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page and 'src="' not in page and 'href="app.css"' not in page
    data = embedded(page)
    assert len(data["requests"]) == 30 and data["archives"]
    assert all(p in data["archives"] for group in data["links"] for p in group)
    assert [p["policy"] for p in data["compare"]["policies"]] == ["default", "codex"]


def test_a_large_sessions_report_leaves_the_two_policies_out_and_says_so() -> None:
    store = MemoryStore()
    sid = tool_loop(store, 30, limit=2_000)
    page = report(store, sid, compare_up_to=29, replay=replay_policy)
    tag = '<script type="application/gzip;base64" id="cc-data">'
    start = page.index(tag) + len(tag)
    data = json.loads(
        gzip.decompress(base64.b64decode(page[start : page.index("</script>", start)]))
    )
    assert data["compare"]["policies"] == []
    assert data["compare"]["left_out"].endswith(f"see them with inspect {sid} --serve")


def test_an_imported_log_shows_one_request_per_answer_each_with_the_whole_history() -> None:
    from context_compact.history.transfer import import_session
    from context_compact.loaders import Session

    # Loaders give content as lists of blocks.
    messages = [{"role": "user", "content": [{"type": "text", "text": REQUEST}]}]
    for turn in range(8):
        messages += pair(f"toolu_{turn}", output(turn))
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "done"}]})
    store = MemoryStore()
    sid = import_session(store, Session("log", "anthropic", None, messages, 0, "log.json")).id
    found = Inspection.load(store, sid)
    assert len(found.requests) == 9 and not found.events
    assert not any(r.cache_break for r in found.requests)
    assert found.view(9) == messages[:-1]
    assert found.summary()["source"] == "import anthropic: log"  # the session's name
