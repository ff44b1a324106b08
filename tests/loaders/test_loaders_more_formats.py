"""The OpenHands V1, aider and results-list loaders, on the public samples in ``tests/data``
(sources and licences in ``tests/data/SOURCES.md``) and on small hand-written logs.

The tool-call counts are counted from the source files here, by their own format's marks
(``ActionEvent`` records, aider's ``> Running`` lines, ``tool_calls`` entries), never from
what the loader returned.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_loaders import violations

from context_compact.loaders import (
    FORMATS,
    Limits,
    Session,
    TooLarge,
    UnknownFormat,
    candidates,
    detect_format,
    load_all,
    load_file,
)
from context_compact.loaders.aider import NOT_RECORDED
from context_compact.loaders.aider import load_text as load_aider
from context_compact.loaders.openhands_v1 import load_events

DATA = Path(__file__).parents[1] / "data"
GOAL = DATA / "openhands_v1/goal-review-events.jsonl"
SCHEMA = DATA / "openhands_v1/constructed-schema-events.json"
AIDER = DATA / "aider/aider-repo.aider.chat.history.md"
TAU = DATA / "results_list/tau-bench-gpt-4o-airline-first3.json"


def blocks(session: Session, kind: str) -> list[dict[str, Any]]:
    return [b for m in session.messages for b in m["content"] if b["type"] == kind]


def texts(session: Session, role: str) -> list[str]:
    return [
        b["text"]
        for m in session.messages
        if m["role"] == role
        for b in m["content"]
        if b["type"] == "text"
    ]


def test_the_new_formats_are_listed() -> None:
    assert {"openhands_v1", "aider", "results_list"} <= set(FORMATS)


# -- OpenHands V1 -----------------------------------------------------------------------------


def test_an_openhands_v1_event_log_keeps_every_action_as_a_tool_call_with_its_own_id() -> None:
    events = [json.loads(line) for line in GOAL.read_text(encoding="utf-8").splitlines()]
    actions = [e for e in events if e["kind"] == "ActionEvent"]
    (session,) = load_file(GOAL)
    assert session.format == "openhands_v1" == detect_format(GOAL)
    assert session.name == "goal-review-events"
    assert violations(session.messages) == []
    uses = blocks(session, "tool_use")
    assert [u["id"] for u in uses] == [a["tool_call_id"] for a in actions]
    assert [u["name"] for u in uses] == [a["tool_name"] for a in actions]
    assert [u["input"] for u in uses] == [json.loads(a["tool_call"]["arguments"]) for a in actions]
    # The log leaves out one action: its observation becomes text, counted, not dropped.
    assert session.notes == {"orphan_tool_result": 1}
    orphan = next(e for e in events if e.get("tool_call_id") == "chatcmpl-tool-9051d3d10f914188")
    assert any(orphan["observation"]["content"][0]["text"] in t for t in texts(session, "user"))
    # reasoning_content repeats the thought's <think> text: kept once, so nothing converted.
    assert session.converted == {}
    assert texts(session, "assistant")[0].startswith("<think>Let me analyze the task.")


def test_every_v1_event_kind_becomes_what_the_sdk_sends_the_model() -> None:
    events = json.loads(SCHEMA.read_text(encoding="utf-8"))
    (session,) = load_file(SCHEMA)
    assert violations(session.messages) == []
    assert session.system == (
        "You are OpenHands agent, a helpful AI assistant.\n\nWorking directory: /workspace"
    )
    assert len(blocks(session, "tool_use")) == sum(e["kind"] == "ActionEvent" for e in events)
    parallel = session.messages[1]
    assert parallel["role"] == "assistant"
    assert [b["type"] for b in parallel["content"]] == ["text", "text", "tool_use", "tool_use"]
    assert parallel["content"][0]["text"].startswith("[reasoning] The user wants two things")
    results = {b["tool_use_id"]: b for b in blocks(session, "tool_result")}
    assert results["call_a"]["content"] == "42"
    assert results["call_c"]["content"] == "Action rejected: Not allowed"
    assert results["call_d"] == {
        "type": "tool_result",
        "tool_use_id": "call_d",
        "content": "Tool 'browser' not found",
        "is_error": True,
    }
    assert "Found 42 Python files; README read." in texts(session, "user")
    assert texts(session, "assistant")[-1].startswith("There are 42 Python files")
    assert session.notes == {"unknown_event:SomeFutureEvent": 1}
    assert session.converted == {"reasoning_as_text": 1}


def events_folder(root: Path, conversation: str = "c0ffee") -> Path:
    """The SDK's own layout: ``<conversation>/events/event-<index>-<id>.json``."""
    folder = root / conversation / "events"
    folder.mkdir(parents=True)
    for index, event in enumerate(json.loads(SCHEMA.read_text(encoding="utf-8"))):
        name = f"event-{index:05d}-{event['id']}.json"
        (folder / name).write_text(json.dumps(event), encoding="utf-8")
    return folder


def test_an_events_folder_is_one_session_named_by_its_conversation(tmp_path: Path) -> None:
    folder = events_folder(tmp_path / "conversations")
    (listed,) = load_file(SCHEMA)
    (session,) = load_file(folder)
    assert session.name == "c0ffee"
    assert session.messages == listed.messages
    assert session.system == listed.system
    assert candidates(tmp_path) == [folder]
    (found,) = load_all(tmp_path)
    assert found.messages == listed.messages


def test_a_page_of_the_agent_servers_event_search_loads_as_its_events(tmp_path: Path) -> None:
    events = json.loads(SCHEMA.read_text(encoding="utf-8"))
    path = tmp_path / "page.json"
    path.write_text(json.dumps({"items": events, "next_page_id": None}), encoding="utf-8")
    (listed,) = load_file(SCHEMA)
    (session,) = load_file(path)
    assert session.format == "openhands_v1"
    assert session.messages == listed.messages and session.system == listed.system


def test_events_folder_files_are_read_in_index_order_not_listing_order(tmp_path: Path) -> None:
    folder = events_folder(tmp_path)
    # Eleven and more events: a string sort of unpadded indexes would put 10 before 2.
    assert len(list(folder.iterdir())) > 10
    (session,) = load_file(folder)
    assert session.messages[0]["content"][0]["text"].startswith("Count the Python files")


def test_an_events_folder_counts_an_event_file_that_does_not_parse(tmp_path: Path) -> None:
    folder = events_folder(tmp_path)
    (folder / "event-00099-broken.json").write_text('{"kind": "MessageEv', encoding="utf-8")
    (session,) = load_file(folder)
    assert session.notes == {"unknown_event:SomeFutureEvent": 1, "unparseable_event": 1}


def test_an_events_folder_over_the_import_limits_is_refused_naming_the_file(
    tmp_path: Path,
) -> None:
    folder = events_folder(tmp_path)
    biggest = max(folder.iterdir(), key=lambda p: p.stat().st_size)
    with pytest.raises(TooLarge, match=f"{biggest.name}: .* per event"):
        load_file(folder, Limits(line_bytes=biggest.stat().st_size - 1))
    with pytest.raises(TooLarge, match="bytes of events"):
        load_file(folder, Limits(file_bytes=biggest.stat().st_size + 1))


# -- aider ------------------------------------------------------------------------------------


def test_an_aider_history_is_one_session_per_run_with_the_commands_aider_ran() -> None:
    source = AIDER.read_text(encoding="utf-8")
    sessions = load_file(AIDER)
    runs = [line for line in source.splitlines() if line.startswith("# aider chat started at")]
    assert [s.name for s in sessions] == [
        "aider-repo.aider.chat.history " + r.removeprefix("# aider chat started at ") for r in runs
    ]
    assert all(s.format == "aider" and violations(s.messages) == [] for s in sessions)
    ran = [
        line[len("> Running ") :].strip()
        for line in source.splitlines()
        if line.startswith("> Running ")
    ]
    uses = [u for s in sessions for u in blocks(s, "tool_use")]
    assert [u["input"]["command"] for u in uses] == ran
    assert all(u["name"] == "shell" for u in uses)
    results = [r for s in sessions for r in blocks(s, "tool_result")]
    assert [r["tool_use_id"] for r in results] == [u["id"] for u in uses]
    # aider never writes the output; the result says so instead of borrowing aider's lines.
    assert [r["content"] for r in results] == [NOT_RECORDED]


def test_an_aider_shell_result_keeps_whether_its_output_went_to_the_chat(tmp_path: Path) -> None:
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(
        "# aider chat started at 2025-01-01 10:00:00\n\n#### list files  \n\nRun this:\n\n"
        "```bash\nls\n```\n\n> ls  \n> Run shell command? (Y)es/(N)o [Yes]: y  \n"
        "> Running ls  \n> Add command output to the chat? (Y)es/(N)o [Yes]: y  \n"
        "> Added 2 lines of output to the chat.  \n> Applied edit to a.py  \n",
        encoding="utf-8",
    )
    (session,) = load_file(path)
    assert session.messages[1]["content"][-1] == {
        "type": "tool_use",
        "id": "aider_1",
        "name": "shell",
        "input": {"command": "ls"},
    }
    assert session.messages[2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "aider_1",
            "content": NOT_RECORDED + "\nAdd command output to the chat? (Y)es/(N)o [Yes]: y"
            "\nAdded 2 lines of output to the chat.",
        }
    ]


def test_aider_keeps_user_turns_and_edit_blocks_as_the_text_they_were() -> None:
    first, second = load_file(AIDER)
    assert texts(first, "user")[:2] == [
        "/add tests/basic/test_main.py",
        "run main() with --map-mul 5 and return_coder. inspect that it is set right in "
        "RepoMap, aider/repomap.py",
    ]
    reply = texts(first, "assistant")[0]
    assert "<<<<<<< SEARCH" in reply and ">>>>>>> REPLACE" in reply
    assert reply.count("<<<<<<< SEARCH") == AIDER.read_text(encoding="utf-8").split(
        "# aider chat started at 2024-08-21 16:04:44"
    )[0].count("<<<<<<< SEARCH")
    # aider's own lines (tokens, costs, commits) are UI, never model text.
    assert not any("Tokens: 12k sent" in t for t in texts(first, "assistant"))
    # The /run output the file holds stays with the command, counted as converted.
    run = next(t for t in texts(first, "user") if t.startswith("/run python -m unittest"))
    assert "[output]" in run and "Ran 1" not in run.split("[output]")[0]
    assert first.converted == {"command_output_as_text": 1}
    assert len(texts(second, "assistant")) == 2


def test_an_aider_history_with_no_conversation_is_not_a_log(tmp_path: Path) -> None:
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(
        "\n# aider chat started at 2025-01-01 10:00:00\n\n> Aider v0.86.1  \n> ^C again  \n",
        encoding="utf-8",
    )
    with pytest.raises(UnknownFormat, match="no conversation"):
        load_file(path)


def test_an_aider_run_of_only_aider_commands_is_no_session(tmp_path: Path) -> None:
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(
        "# aider chat started at 2025-01-01 10:00:00\n\n#### /add a.py  \n> Added a.py  \n\n"
        "#### /exit  \n\n# aider chat started at 2025-01-01 11:00:00\n\n#### why?  \n"
        "> ^C KeyboardInterrupt  \n",
        encoding="utf-8",
    )
    (session,) = load_file(path)
    assert session.name == ".aider.chat.history 2025-01-01 11:00:00"
    assert session.messages == [{"role": "user", "content": [{"type": "text", "text": "why?"}]}]


def test_a_markdown_file_that_is_not_an_aider_history_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\nnothing here\n", encoding="utf-8")
    with pytest.raises(UnknownFormat, match="not an aider chat history"):
        load_file(path)


def test_a_folder_picks_up_the_hidden_aider_history_and_no_other_hidden_file(
    tmp_path: Path,
) -> None:
    shutil.copy(AIDER, tmp_path / ".aider.chat.history.md")
    (tmp_path / ".other.json").write_text("[]", encoding="utf-8")
    (tmp_path / ".git").mkdir()
    shutil.copy(AIDER, tmp_path / ".git" / ".aider.chat.history.md")
    assert candidates(tmp_path) == [tmp_path / ".aider.chat.history.md"]
    names = [s.name for s in load_all(tmp_path, strict=True)]
    assert names == [
        ".aider.chat.history 2024-08-21 16:02:08",
        ".aider.chat.history 2024-08-21 16:04:44",
    ]


# -- results lists ----------------------------------------------------------------------------


def test_a_tau_bench_results_list_is_one_session_per_run_named_by_its_task() -> None:
    runs = json.loads(TAU.read_text(encoding="utf-8"))
    sessions = load_file(TAU)
    assert [s.name for s in sessions] == [f"{r['task_id']} trial {r['trial']}" for r in runs]
    assert all(s.format == "results_list" and violations(s.messages) == [] for s in sessions)
    for run, session in zip(runs, sessions, strict=True):
        calls = [c for m in run["traj"] for c in m.get("tool_calls") or []]
        assert len(blocks(session, "tool_use")) == len(calls)
        assert session.system == run["traj"][0]["content"]
    assert [len(blocks(s, "tool_use")) for s in sessions] == [8, 0, 7]


def test_a_results_list_repairs_a_reused_call_id_and_says_so() -> None:
    runs = json.loads(TAU.read_text(encoding="utf-8"))
    ids = [c["id"] for m in runs[0]["traj"] for c in m.get("tool_calls") or []]
    repeats = len(ids) - len(set(ids))
    first = load_file(TAU)[0]
    assert first.notes == ({"duplicate_id": repeats} if repeats else {})
    assert first.skipped == repeats


def test_a_wrapped_results_list_with_messages_and_ids_loads_too(tmp_path: Path) -> None:
    chat = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    path = tmp_path / "results.json"
    document = {"simulations": [{"id": "sim-a", "messages": chat}, {"id": 7, "messages": chat}]}
    path.write_text(json.dumps(document), encoding="utf-8")
    sessions = load_file(path)
    assert [s.name for s in sessions] == ["sim-a", "7"]
    assert [len(blocks(s, "tool_use")) for s in sessions] == [1, 1]


def test_a_plain_chat_list_is_still_openai_chat_not_a_results_list(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-8")
    assert detect_format(path) == "openai_chat"


# -- properties -------------------------------------------------------------------------------

AIDER_LINES = st.sampled_from(
    [
        "# aider chat started at 2025-01-01 10:00:00",
        "#### fix the bug  ",
        "#### /run pytest  ",
        "####   ",
        "> Running make test  ",
        "> Applied edit to a.py  ",
        "> multi-line start",
        "continued  ",
        ">",
        "Here is the change:",
        "```python",
        "```",
        "<<<<<<< SEARCH",
        ">>>>>>> REPLACE",
        "> quoted inside a fence?  ",
        "",
    ]
)


@given(st.lists(AIDER_LINES, max_size=40))
def test_any_aider_history_loads_valid_or_is_refused_as_not_a_log(lines: list[str]) -> None:
    text = "\n".join(lines)
    try:
        sessions = load_aider(text, "x.aider.chat.history.md")
    except UnknownFormat:
        return
    for session in sessions:
        assert violations(session.messages) == []
        assert all(m["content"] for m in session.messages)
    uses = sum(len(blocks(s, "tool_use")) for s in sessions)
    assert uses <= sum(line.startswith("> Running ") for line in lines)


EVENT_IDS = st.sampled_from(["a", "b", "c"])


def _event(kind: str, call: str, response: str) -> dict[str, Any]:
    if kind == "ActionEvent":
        tool_call = {"id": call, "name": "terminal", "arguments": '{"command": "ls"}'}
        return {
            "kind": kind,
            "thought": [{"type": "text", "text": "t"}],
            "tool_call_id": call,
            "tool_name": "terminal",
            "tool_call": tool_call,
            "llm_response_id": response,
        }
    if kind == "ObservationEvent":
        return {"kind": kind, "tool_call_id": call, "observation": {"content": "out"}}
    if kind == "MessageEvent":
        role = "assistant" if response == "a" else "user"
        return {"kind": kind, "llm_message": {"role": role, "content": [{"text": "m"}]}}
    return {"kind": kind, "tool_call_id": call, "error": "e", "summary": "s"}


V1_EVENTS = st.lists(
    st.builds(
        _event,
        st.sampled_from(
            [
                "ActionEvent",
                "ObservationEvent",
                "MessageEvent",
                "AgentErrorEvent",
                "UserRejectObservation",
                "CondensationSummaryEvent",
                "ConversationStateUpdateEvent",
            ]
        ),
        EVENT_IDS,
        EVENT_IDS,
    ),
    min_size=1,
    max_size=30,
)


@given(V1_EVENTS)
def test_any_v1_event_list_loads_into_a_valid_history_keeping_every_action(
    events: list[dict[str, Any]],
) -> None:
    session = load_events(events, "x.jsonl", "x")
    assert violations(session.messages) == []
    assert len(blocks(session, "tool_use")) == sum(e["kind"] == "ActionEvent" for e in events)
