"""The ``context-compact`` command, through ``CliRunner`` and the loopback stub API."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import stub_api as s
from cli_model import SETTINGS, serve
from context_compact.cli import main
from context_compact.cli.agent import read_dotenv
from stub_api import Reply, StubAPI


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    (root / "notes.txt").write_text("remember the milk\n", encoding="utf-8")
    return root


def read_notes() -> Reply:
    return Reply(text="Looking.", tool_calls=(s.ToolCall("read_file", {"path": "notes.txt"}),))


def cli(args: list[str], env: dict[str, str] | None = None, input: str | None = None) -> Result:
    return CliRunner().invoke(main, args, env=env, input=input)


def stub_env(kind: str, stub: StubAPI, model: str = "test-model") -> dict[str, str]:
    if kind == "anthropic":
        return {"MODEL_ID": model, "ANTHROPIC_BASE_URL": stub.url}
    return {"MODEL_ID": model, "OPENAI_BASE_URL": stub.openai_url}


def one_error_line(result: Result) -> str:
    """The one error line: the last on stderr (progress goes there too), and no traceback."""
    lines = result.stderr.splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], result.stderr
    assert "Traceback" not in result.stderr
    return errors[0]


def saved_transcript(line: str) -> Path:
    found = re.search(r"saved to (\S+\.jsonl)$", line)
    assert found, line
    path = Path(found.group(1))
    assert path.is_file()
    return path


@pytest.fixture(params=["anthropic", "openai"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# -- demo --------------------------------------------------------------------------------


def test_demo_runs_offline_and_shows_where_the_artifacts_are(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    result = cli(["demo", "--workdir", str(root)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"artifacts in {root.resolve()}" in out
    assert "reactive compaction" in out and "compact_history" in out
    assert "persist_new_results" in out and "app/tax.py fixed" in out
    assert list((root / ".transcripts").glob("*.jsonl"))
    assert list((root / ".task_outputs" / "tool-results").glob("*.txt"))
    assert "quantize" in (root / "app" / "tax.py").read_text()


def test_the_demos_happy_path_prints_no_warning(tmp_path: Path) -> None:
    result = cli(["demo", "--workdir", str(tmp_path / "demo")])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output.lower()


def test_demo_keeps_its_temporary_workspace_to_look_at() -> None:
    result = cli(["demo"])
    assert result.exit_code == 0, result.output
    workspace = re.search(r"^workspace: (\S+)$", result.stdout, re.M)
    assert workspace and Path(workspace.group(1), ".transcripts").is_dir()
    shutil.rmtree(workspace.group(1))


def test_demo_with_clean_removes_its_temporary_workspace() -> None:
    result = cli(["demo", "--clean"])
    assert result.exit_code == 0, result.output
    workspace = re.search(r"^workspace: (\S+)$", result.stdout, re.M)
    assert workspace and not Path(workspace.group(1)).exists()


def test_demo_refuses_a_directory_that_is_not_empty(work: Path) -> None:
    result = cli(["demo", "--workdir", str(work)])
    assert result.exit_code == 2
    assert "not empty" in result.stderr


# -- run ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["default", "seed"])
def test_run_prints_the_answer_through_the_real_sdk(
    kind: str, policy: str, stub_api: StubAPI, work: Path
) -> None:
    serve(stub_api, read_notes(), Reply(text="The note says: remember the milk."))
    args = ["run", "What does notes.txt say?", "--workdir", str(work)]
    result = cli([*args, "--provider", kind, "--policy", policy], stub_env(kind, stub_api))
    assert result.exit_code == 0, result.output + result.stderr
    assert result.stdout == "The note says: remember the milk.\n"
    assert "→ read_file notes.txt" in result.stderr
    assert [b["model"] for b in stub_api.bodies] == ["test-model", "test-model"]


@pytest.mark.slow
def test_run_redirected_puts_only_the_answer_in_the_file_and_progress_on_stderr(
    stub_api: StubAPI, work: Path, tmp_path: Path
) -> None:
    serve(stub_api, read_notes(), Reply(text="The note says: remember the milk."))
    env = {**os.environ, **stub_env("anthropic", stub_api), "PYTHONPATH": os.pathsep.join(sys.path)}
    command = f"{sys.executable} -m context_compact.cli run 'What is in notes.txt?' >out 2>err"
    done = subprocess.run(command, shell=True, cwd=work, env=env, check=False)
    assert done.returncode == 0, (work / "err").read_text()
    assert (work / "out").read_text() == "The note says: remember the milk.\n"
    assert "→ read_file notes.txt" in (work / "err").read_text()


def test_run_quiet_prints_the_answer_and_nothing_on_stderr(stub_api: StubAPI, work: Path) -> None:
    serve(stub_api, read_notes(), Reply(text="Milk."))
    args = ["run", "What is in notes.txt?", "--workdir", str(work), "--quiet"]
    result = cli(args, stub_env("anthropic", stub_api))
    assert result.exit_code == 0, result.stderr
    assert (result.stdout, result.stderr) == ("Milk.\n", "")


def test_run_json_prints_the_answer_and_the_session_to_resume(
    stub_api: StubAPI, work: Path
) -> None:
    serve(stub_api, read_notes(), Reply(text="Milk."))
    args = ["run", "What is in notes.txt?", "--workdir", str(work), "--json"]
    result = cli(args, stub_env("anthropic", stub_api))
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["answer"] == "Milk." and data["turns"] == 2 and data["stopped_reason"] == "end_turn"
    listed = json.loads(cli(["sessions", "--json", "--workdir", str(work)]).stdout)
    assert [row["id"] for row in listed] == [data["session"]]


def test_a_second_refusal_exits_1_with_one_line_and_a_saved_transcript(
    kind: str, stub_api: StubAPI, work: Path
) -> None:
    refusal = s.anthropic_prompt_too_long if kind == "anthropic" else s.llamacpp_exceed_context
    serve(stub_api, read_notes(), refusal(), refusal())
    args = ["run", "Summarize notes.txt", "--workdir", str(work), "--provider", kind]
    result = cli(args, stub_env(kind, stub_api))
    assert result.exit_code == 1
    line = one_error_line(result)
    assert line.startswith("error: the API refused the prompt as too long again")
    transcript = saved_transcript(line)
    assert transcript.parent == work.resolve() / ".transcripts"
    assert "Summarize notes.txt" in transcript.read_text()
    assert "API refused the prompt" in result.stderr and result.stdout == ""


def test_an_authentication_error_exits_1_and_says_which_key_to_check(
    kind: str, stub_api: StubAPI, work: Path
) -> None:
    error = (
        s.anthropic_authentication_error if kind == "anthropic" else s.openai_authentication_error
    )
    serve(stub_api, error())
    args = ["run", "hi", "--workdir", str(work), "--provider", kind]
    result = cli(args, stub_env(kind, stub_api))
    assert result.exit_code == 1
    line = one_error_line(result)
    assert "HTTP 401" in line and f"Check {kind.upper()}_API_KEY" in line
    assert saved_transcript(line).read_text().strip() == json.dumps(
        {"role": "user", "content": "hi"}
    )


def test_debug_adds_the_traceback(stub_api: StubAPI, work: Path) -> None:
    serve(stub_api, s.anthropic_authentication_error())
    args = ["run", "hi", "--workdir", str(work), "--debug"]
    result = cli(args, stub_env("anthropic", stub_api))
    assert result.exit_code == 1
    assert "Traceback" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("error: model call failed")


def test_an_unreachable_server_exits_1_and_points_at_the_base_url(work: Path) -> None:
    env = {"MODEL_ID": "m", "OPENAI_BASE_URL": s.closed_port_url() + "/v1"}
    result = cli(["run", "hi", "--workdir", str(work), "--provider", "openai"], env)
    assert result.exit_code == 1
    assert "OPENAI_BASE_URL" in one_error_line(result)


def test_running_out_of_turns_exits_1_and_saves_the_conversation(
    stub_api: StubAPI, work: Path
) -> None:
    serve(stub_api, read_notes())
    args = ["run", "hi", "--workdir", str(work), "--max-turns", "1"]
    result = cli(args, stub_env("anthropic", stub_api))
    assert result.exit_code == 1
    line = one_error_line(result)
    assert "--max-turns" in line
    saved_transcript(line)


def test_s6_5_a_missing_model_id_is_a_usage_error(work: Path) -> None:
    result = cli(["run", "hi", "--workdir", str(work)], {"ANTHROPIC_API_KEY": "k"})
    assert result.exit_code == 2
    assert "MODEL_ID" in result.stderr and "--model" in result.stderr


def test_a_missing_api_key_for_a_remote_api_is_a_usage_error(work: Path) -> None:
    result = cli(["run", "hi", "--workdir", str(work)], {"MODEL_ID": "claude-x"})
    assert result.exit_code == 2
    assert "ANTHROPIC_API_KEY" in result.stderr


def test_s6_5_the_env_file_in_the_work_directory_is_read_and_the_real_environment_wins(
    stub_api: StubAPI, work: Path
) -> None:
    (work / ".env").write_text(
        f"# settings\nexport MODEL_ID=from-dotenv\nANTHROPIC_BASE_URL='{stub_api.url}'\n",
        encoding="utf-8",
    )
    serve(stub_api, Reply(text="one"), Reply(text="two"))
    assert cli(["run", "hi", "--workdir", str(work)]).exit_code == 0
    assert cli(["run", "hi", "--workdir", str(work)], {"MODEL_ID": "from-env"}).exit_code == 0
    assert [b["model"] for b in stub_api.bodies] == ["from-dotenv", "from-env"]


def test_read_dotenv_understands_comments_quotes_and_export(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text(
        "# comment\n\nexport A=1\nB = \"two words\"\nC=3 # trailing\nD='x=y'\nnot a pair\n",
        encoding="utf-8",
    )
    assert read_dotenv(path) == {"A": "1", "B": "two words", "C": "3", "D": "x=y"}
    assert read_dotenv(tmp_path / "missing") == {}


# -- chat --------------------------------------------------------------------------------


def test_s6_5_chat_answers_a_request_and_quits_on_q(stub_api: StubAPI, work: Path) -> None:
    serve(stub_api, Reply(text="Hello there."))
    result = cli(["chat", "--workdir", str(work)], stub_env("anthropic", stub_api), "hello\nq\n")
    assert result.exit_code == 0, result.output
    assert "/compact [focus]" in result.stderr
    assert result.stdout.replace("> ", "") == "Hello there.\n"
    assert len(stub_api.bodies) == 1


def test_chat_keeps_the_history_across_requests_until_end_of_input(
    kind: str, stub_api: StubAPI, work: Path
) -> None:
    serve(stub_api, read_notes(), Reply(text="It says milk."), Reply(text="Yes, milk."))
    args = ["chat", "--workdir", str(work), "--provider", kind]
    result = cli(args, stub_env(kind, stub_api), "what is in notes.txt?\nare you sure?\n")
    assert result.exit_code == 0, result.output
    assert "It says milk." in result.stdout and "Yes, milk." in result.stdout
    last = json.dumps(stub_api.bodies[-1])
    assert "what is in notes.txt?" in last and "It says milk." in last
    assert "remember the milk" in last


def test_slash_compact_in_chat_summarizes_now_with_the_focus(stub_api: StubAPI, work: Path) -> None:
    model = serve(stub_api, read_notes(), Reply(text="It says milk."), Reply(text="Still milk."))
    script = "read notes.txt\n/compact keep the grocery list\nanything else?\nexit\n"
    result = cli(["chat", "--workdir", str(work)], stub_env("anthropic", stub_api), script)
    assert result.exit_code == 0, result.output
    assert "⟳ compact_history" in result.stderr
    assert len(model.summary_requests) == 1
    # The summary continues the agent's own request (its system prompt, tools and messages,
    # so its input is read from the prompt cache); the instruction, with the focus, last.
    summary = model.summary_requests[0]
    agent = stub_api.bodies[stub_api.bodies.index(summary) - 1]
    assert summary["system"] == agent["system"] and summary["tools"] == agent["tools"]
    assert "keep the grocery list" in json.dumps(summary["messages"][-1])
    before = [unmarked(m) for m in agent["messages"]]
    assert [unmarked(m) for m in summary["messages"][: len(before)]] == before

    after = json.dumps(stub_api.bodies[-1]["messages"])
    assert "[Compacted]" in after
    assert re.search(
        r"Current user request:\\n<request-(\w+)>\\nread notes.txt\\n</request-\1>", after
    )


def test_slash_compact_before_any_request_has_nothing_to_do(stub_api: StubAPI, work: Path) -> None:
    result = cli(["chat", "--workdir", str(work)], stub_env("anthropic", stub_api), "/compact\n")
    assert result.exit_code == 0
    assert "nothing to compact" in result.stderr
    assert stub_api.bodies == []


def test_chat_reports_a_failed_request_keeps_going_and_exits_1(
    stub_api: StubAPI, work: Path
) -> None:
    serve(stub_api, s.anthropic_authentication_error(), Reply(text="Back again."))
    script = "hello\nhello again\nq\n"
    result = cli(["chat", "--workdir", str(work)], stub_env("anthropic", stub_api), script)
    assert result.exit_code == 1
    saved_transcript(one_error_line(result))
    assert "Back again." in result.stdout


def test_ctrl_c_at_the_chat_prompt_keeps_the_repl_and_a_second_one_quits(
    stub_api: StubAPI, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    serve(stub_api, Reply(text="First answer."), Reply(text="Second answer."))
    typed = iter(["one", KeyboardInterrupt, "two", KeyboardInterrupt, KeyboardInterrupt, "never"])

    def fake_input(prompt: str = "") -> str:
        item = next(typed)
        if item is KeyboardInterrupt:
            raise KeyboardInterrupt
        return str(item)

    monkeypatch.setattr("builtins.input", fake_input)
    result = cli(["chat", "--workdir", str(work)], stub_env("anthropic", stub_api))
    assert result.exit_code == 0, result.output
    assert "First answer." in result.stdout and "Second answer." in result.stdout
    assert "Ctrl-C again" in result.stderr
    assert len(stub_api.bodies) == 2


def test_chat_resume_continues_a_session_from_its_store(stub_api: StubAPI, work: Path) -> None:
    serve(stub_api, Reply(text="It is blue."), Reply(text="You asked about the sky."))
    first = cli(["chat", "--workdir", str(work)], stub_env("anthropic", stub_api), "sky?\nq\n")
    assert first.exit_code == 0, first.output
    (sid,) = re.findall(r"Session (\w+) is saved", first.stderr)
    args = ["chat", "--workdir", str(work), "--resume", sid]
    again = cli(args, stub_env("anthropic", stub_api), "what did I ask?\nq\n")
    assert again.exit_code == 0, again.output
    sent = json.dumps(stub_api.bodies[-1])
    assert "sky?" in sent and "It is blue." in sent and "what did I ask?" in sent


def test_resuming_an_unknown_session_fails_naming_it(stub_api: StubAPI, work: Path) -> None:
    args = ["run", "x", "--workdir", str(work), "--resume", "nope"]
    result = cli(args, stub_env("anthropic", stub_api))
    assert result.exit_code == 1 and "Usage:" not in result.stderr
    assert "no session 'nope'" in result.stderr


def unmarked(message: dict[str, Any]) -> list[Any]:
    """A message's content as the cache sees it: text blocks, no cache breakpoints."""
    content = message["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    return [message["role"], [{k: v for k, v in b.items() if k != "cache_control"} for b in blocks]]
