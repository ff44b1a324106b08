"""The session commands (import, export, sessions, inspect, compact) on the real logs of the
shared pack, through ``CliRunner``; skipped where the pack is absent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from context_compact.cli import main
from context_compact.registry import NAMES, load_plugins

load_plugins()  # every engine of the registry, those of installed packages (the bench) included

# The trajectory pack, copied into the repository (tests/data/SOURCES.md says from where).
PACK = Path(__file__).resolve().parents[1] / "data" / "trajectories"
needs_pack = pytest.mark.skipif(not PACK.is_dir(), reason=f"trajectory pack absent at {PACK}")
CODEX = "codex/AcidicSoil-codex-session-view"
ONE_OF_EACH = [
    "claude-code/marot-spotter/4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-a2898e3.jsonl",
    f"{CODEX}/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
    "openhands/multi_swe_bench-examples-output.jsonl",
    "swe-agent/marshmallow-1867__function_calling_replace.traj",
    "mini-swe-agent/github_issue.traj.json",
    "openhands-sdk/fncall-llm-message.json",
]


def cli(*args: str, workdir: Path) -> Result:
    return CliRunner().invoke(main, [*args, "--workdir", str(workdir)])


def ok_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def tool_calls_listed() -> dict[str, int]:
    """SOURCES.md's "tool calls" column, by file (the pack's own count of each source)."""
    counts = {}
    for line in (PACK / "SOURCES.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| `data/trajectories/"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            counts[cells[0].strip("`").removeprefix("data/trajectories/")] = int(
                cells[8].replace(",", "")
            )
    return counts


def imported(workdir: Path, path: Path) -> list[dict[str, Any]]:
    sessions: list[dict[str, Any]] = ok_json(cli("import", str(path), "--json", workdir=workdir))[
        "sessions"
    ]
    return sessions


def messages_of(workdir: Path, sid: str) -> list[dict[str, Any]]:
    out = cli("export", sid, "--format", "jsonl", workdir=workdir)
    assert out.exit_code == 0, out.output
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    return [m for m in lines if m["role"] != "system"]


def tool_pairs(
    messages: list[dict[str, Any]], error_prefix: str = ""
) -> list[tuple[str, str, str, str]]:
    """Each result with its call; ``error_prefix`` is put before failed results' text (how
    Chat Completions, which has no ``is_error``, carries the flag)."""
    uses = {
        b["id"]: b
        for m in messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_use"
    }
    return [
        (
            b["tool_use_id"],
            uses[b["tool_use_id"]]["name"],
            json.dumps(uses[b["tool_use_id"]]["input"], sort_keys=True),
            (error_prefix if b.get("is_error") else "") + b["content"],
        )
        for m in messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]


@needs_pack
def test_every_log_of_the_pack_imports_and_each_tool_call_becomes_a_tool_use(
    tmp_path: Path,
) -> None:
    result = ok_json(cli("import", str(PACK), "--json", workdir=tmp_path))
    assert result["failures"] == []
    by_file: dict[str, int] = {}
    for session in result["sessions"]:
        rel = str(Path(session["file"]).relative_to(PACK))
        by_file[rel] = by_file.get(rel, 0) + session["tool_uses"]
    assert by_file == tool_calls_listed()
    listed = ok_json(cli("sessions", "--json", workdir=tmp_path))
    assert {s["id"] for s in listed} == {s["id"] for s in result["sessions"]}
    assert all(s["source"].startswith("import ") for s in listed)


@needs_pack
@pytest.mark.parametrize("fmt", ["jsonl", "anthropic", "openai"])
@pytest.mark.parametrize("rel", ONE_OF_EACH)
def test_import_export_import_keeps_every_message_and_tool_pair(
    tmp_path: Path, fmt: str, rel: str
) -> None:
    first = imported(tmp_path, PACK / rel)[0]
    original = messages_of(tmp_path, first["id"])
    if fmt != "jsonl":  # a request: calls left unanswered at the end get resume's error result
        original = answered_at_the_end(original)
    exported = tmp_path / f"out.{'jsonl' if fmt == 'jsonl' else 'json'}"
    result = cli("export", first["id"], "--format", fmt, "-o", str(exported), workdir=tmp_path)
    assert result.exit_code == 0, result.output
    (again,) = imported(tmp_path, exported)
    assert again["format"] == ("openai_chat" if fmt == "openai" else "anthropic")
    assert again["skipped"] == 0
    back = messages_of(tmp_path, again["id"])
    assert tool_pairs(back) == tool_pairs(original, "Error: " if fmt == "openai" else "")
    assert again["tool_uses"] == first["tool_uses"]
    if fmt != "openai":
        assert back == original
    else:  # Chat Completions has no user message holding both results and text: same texts
        assert texts(back) == texts(original)


def answered_at_the_end(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from context_compact.agent.loop import not_run

    if messages and messages[-1]["role"] == "assistant" and not_run(messages[-1])["content"]:
        return [*messages, not_run(messages[-1])]
    return messages


def texts(messages: list[dict[str, Any]]) -> list[str]:
    return [
        b["text"]
        for m in messages
        for b in (m["content"] if isinstance(m["content"], list) else [])
        if b.get("type") == "text"
    ]


def test_a_file_in_no_known_format_is_one_error_line_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"messages": [1, 2,,]}', encoding="utf-8")
    result = cli("import", str(bad), workdir=tmp_path)
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert str(bad) in line and "line 1, column" in line and "Traceback" not in result.output


def test_a_directory_import_names_each_file_it_could_not_read(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "good.json").write_text(
        json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]),
        encoding="utf-8",
    )
    (logs / "notes.json").write_text('{"title": "not a log"}', encoding="utf-8")
    result = CliRunner().invoke(main, ["import", str(logs), "--workdir", str(tmp_path), "--json"])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert [s["name"] for s in data["sessions"]] == ["good"]
    (failure,) = data["failures"]
    assert failure["path"].endswith("notes.json") and "known" in failure["reason"]


@needs_pack
def test_compact_dry_run_reports_each_pass_and_writes_nothing(tmp_path: Path) -> None:
    sid = imported(tmp_path, PACK / ONE_OF_EACH[1])[0]["id"]
    before = sorted(p.name for p in tmp_path.rglob("*"))
    args = ("compact", sid, "--policy", "default", "--context-limit", "12500", "--dry-run")
    outcome = ok_json(cli(*args, "--json", workdir=tmp_path))
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert outcome["session"] is None and outcome["dry_run"] is True
    stages = {p["stage"] for p in outcome["passes"]}
    assert {"persist_new_results", "clear_old_results"} <= stages
    assert all(p["before"] - p["after"] == p["saved"] > 0 for p in outcome["passes"])
    assert max(outcome["view_tokens"]) <= 12_500 < outcome["uncompacted_tokens"]
    assert len(ok_json(cli("sessions", "--json", workdir=tmp_path))) == 1
    text = cli(*args, workdir=tmp_path)
    assert "dry run: nothing written" in text.stdout and "clear_old_results" in text.stdout


@needs_pack
@pytest.mark.parametrize("policy", NAMES)
def test_compact_runs_every_policy_of_the_registry_on_a_real_log(
    tmp_path: Path, policy: str
) -> None:
    log = PACK / ONE_OF_EACH[1]
    outcome = ok_json(
        cli("compact", str(log), "--policy", policy, "--dry-run", "--json", workdir=tmp_path)
    )
    assert outcome["policy"] == policy and len(outcome["view_tokens"]) == 40
    assert outcome["final_view_messages"] > 0


@needs_pack
def test_compact_keeps_its_result_as_a_new_session_that_inspect_shows(tmp_path: Path) -> None:
    sid = imported(tmp_path, PACK / ONE_OF_EACH[1])[0]["id"]
    args = ("compact", sid, "--policy", "default", "--context-limit", "12500", "--json")
    outcome = ok_json(cli(*args, workdir=tmp_path))
    new = outcome["session"]
    assert new and new != sid
    listed = {s["id"]: s for s in ok_json(cli("sessions", "--json", workdir=tmp_path))}
    assert listed[new]["source"] == f"compact default of {sid}"
    assert listed[new]["compactions"] > 0 and listed[sid]["compactions"] == 0
    timeline = ok_json(cli("inspect", new, "--json", workdir=tmp_path))
    assert timeline["turns"] == listed[sid]["turns"]
    assert [e["stage"] for e in timeline["events"]] == [p["stage"] for p in outcome["passes"]]
    for event in timeline["events"]:
        assert event["saved"] > 0
        for path in event["paths"]:
            assert (tmp_path / path).is_file()  # where the copy went, relative to the workdir
    shown = cli("inspect", new, workdir=tmp_path)
    assert shown.exit_code == 0
    assert all(len(line) <= 80 for line in shown.stdout.splitlines() if "│" in line or "└" in line)
    assert "compactions (turn, event" in shown.stdout
    # The source session is untouched, and recall reaches into the new one's originals.
    assert messages_of(tmp_path, new) == messages_of(tmp_path, sid)


def test_session_commands_name_an_unknown_session(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(
        json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-8"
    )
    assert cli("import", str(tmp_path / "a.json"), workdir=tmp_path).exit_code == 0
    for command in (["inspect", "nope"], ["export", "nope"], ["compact", "nope", "--dry-run"]):
        result = cli(*command, workdir=tmp_path)
        assert result.exit_code == 1 and "nope" in result.output, command
        assert "Usage:" not in result.output, command


@needs_pack
def test_an_import_names_the_lines_that_are_not_json(tmp_path: Path) -> None:
    source = PACK / ONE_OF_EACH[1]  # a Codex rollout: JSON Lines
    lines = source.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2][: len(lines[2]) // 2]  # cut off mid-record, as a crash would
    lines.insert(5, "not json at all")
    broken = tmp_path / "rollout-broken.jsonl"
    broken.write_text("\n".join(lines) + "\n", encoding="utf-8")
    work = tmp_path / "work"
    (report,) = ok_json(cli("import", str(broken), "--json", workdir=work))["sessions"]
    assert report["notes"]["unparseable_line"] == 2
    assert report["bad_lines"] == [3, 6]
    text = cli("import", str(broken), workdir=work)
    assert text.exit_code == 0, text.output
    assert "unparseable_line=2; not JSON: line 3, 6" in text.output


@needs_pack
@pytest.mark.parametrize("policy", ["default", "codex"])
@pytest.mark.parametrize(
    "rel", ["swe-agent/pydicom__pydicom-1458.traj", "mini-swe-agent/github_issue.traj.json"]
)
def test_compact_keeps_the_system_prompt_of_the_log_for_export(
    tmp_path: Path, policy: str, rel: str
) -> None:
    sid = imported(tmp_path, PACK / rel)[0]["id"]
    system = json.loads(cli("export", sid, workdir=tmp_path).stdout.splitlines()[0])
    assert system["role"] == "system" and system["content"]
    outcome = ok_json(cli("compact", sid, "--policy", policy, "--json", workdir=tmp_path))
    for fmt in ("jsonl", "anthropic", "openai"):
        out = cli("export", outcome["session"], "--format", fmt, workdir=tmp_path)
        assert out.exit_code == 0, out.output
        assert json.dumps(system["content"])[1:80] in out.stdout, fmt


def stopped_mid_call(tmp_path: Path) -> str:
    """A log whose agent stopped after asking for two tool calls, before their results."""
    calls = [
        {"type": "tool_use", "id": f"toolu_{n}", "name": "bash", "input": {"command": "ls"}}
        for n in (1, 2)
    ]
    messages = [
        {"role": "user", "content": "list the files"},
        {"role": "assistant", "content": [{"type": "text", "text": "Listing."}, *calls]},
    ]
    log = tmp_path / "stopped.json"
    log.write_text(json.dumps({"system": "be brief", "messages": messages}), encoding="utf-8")
    return str(imported(tmp_path, log)[0]["id"])


@pytest.mark.parametrize("fmt", ["anthropic", "openai"])
def test_export_in_an_api_format_answers_the_calls_left_unanswered_at_the_end(
    tmp_path: Path, fmt: str
) -> None:
    from context_compact.agent.loop import NOT_RUN
    from context_compact.invariants import check

    sid = stopped_mid_call(tmp_path)
    result = cli("export", sid, "--format", fmt, workdir=tmp_path)
    assert result.exit_code == 0, result.output
    assert "note: 2 tool call(s) at the end never got a result" in result.stderr
    document = json.loads(result.stdout)
    if fmt == "anthropic":
        assert document["system"] == "be brief"
        assert check(document["messages"]) == []
        last = document["messages"][-1]["content"]
        assert [(b["tool_use_id"], b["content"], b["is_error"]) for b in last] == [
            ("toolu_1", NOT_RUN, True),
            ("toolu_2", NOT_RUN, True),
        ]
    else:
        tools = [m for m in document if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in tools] == ["toolu_1", "toolu_2"]
        assert all(NOT_RUN in json.dumps(m["content"]) for m in tools)


def test_export_as_jsonl_stays_the_log_as_it_is(tmp_path: Path) -> None:
    sid = stopped_mid_call(tmp_path)
    result = cli("export", sid, "--format", "jsonl", workdir=tmp_path)
    assert result.exit_code == 0 and result.stderr == ""
    last = json.loads(result.stdout.splitlines()[-1])
    assert last["role"] == "assistant"


@needs_pack
def test_a_codex_import_keeps_the_reasoning_summaries_where_recall_finds_them(
    tmp_path: Path,
) -> None:
    source = PACK / ONE_OF_EACH[1]
    items = [json.loads(line)["payload"] for line in source.read_text().splitlines()]
    reasoning = [i for i in items if i.get("type") == "reasoning"]
    readable = [i for i in reasoning if i["summary"]]
    (report,) = imported(tmp_path, source)
    assert report["converted"] == {"reasoning_as_text": len(readable)}
    assert report["notes"].get("encrypted_reasoning", 0) == len(reasoning) - len(readable)
    wanted = readable[-1]["summary"][0]["text"]
    found = cli("recall", report["id"], wanted.strip("*"), workdir=tmp_path)
    assert found.exit_code == 0 and wanted in found.stdout
    text = cli("import", str(source), workdir=tmp_path).stdout
    assert f"{len(readable)} kept in another form (reasoning_as_text={len(readable)})" in text
