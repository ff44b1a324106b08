"""A ``run`` killed with SIGKILL in the middle of a task is finished by ``run --resume``, whose
first request carries everything the killed process had sent; and a session another live
``run`` writes is refused with a clear error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import stub_api as s
from context_compact.cli import main
from stub_api import Reply, StubAPI

BEFORE_KILL = 3  # model requests the first process gets answered


def start_run(work: Path, stub: StubAPI, *args: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "MODEL_ID": "claude-test",
        "ANTHROPIC_BASE_URL": stub.url,
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    command = [sys.executable, "-m", "context_compact.cli", "run", *args, "--workdir", str(work)]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_for(condition: Any, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


class Hanging:
    """Answers with a tool call ``BEFORE_KILL`` times, then holds the next request open."""

    def __init__(self) -> None:
        self.calls = 0
        self.release = threading.Event()

    def __call__(self, body: Any) -> Any:
        self.calls += 1
        if self.calls <= BEFORE_KILL:
            call = s.ToolCall("read_file", {"path": "notes.txt"}, id=f"toolu_{self.calls}")
            return Reply(text=f"Reading, step {self.calls}.", tool_calls=(call,))
        self.release.wait(timeout=60)
        return Reply(text="too late")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("remember the milk\n", encoding="utf-8")
    return tmp_path


def without_cache_marks(messages: Any) -> Any:
    """The messages as the session holds them: the provider marks a cache breakpoint on the
    last block of each request, which is not part of the history."""
    text = json.dumps(messages).replace(', "cache_control": {"type": "ephemeral"}', "")
    return json.loads(text)


def newest_session(work: Path) -> str:
    listed = CliRunner().invoke(main, ["sessions", "--workdir", str(work), "--json"])
    assert listed.exit_code == 0, listed.output
    sid: str = json.loads(listed.stdout)[0]["id"]
    return sid


def test_a_run_killed_with_sigkill_resumes_with_its_history_and_finishes(
    stub_api: StubAPI, work: Path
) -> None:
    model = Hanging()
    stub_api.enqueue(*[model] * (BEFORE_KILL + 1))
    child = start_run(work, stub_api, "What does notes.txt say?")
    try:
        wait_for(lambda: len(stub_api.bodies) == BEFORE_KILL + 1, "the request held open")
        child.kill()
        child.wait(timeout=30)
    finally:
        model.release.set()
    assert child.returncode == -9
    sent_before_kill = without_cache_marks(stub_api.bodies[-1]["messages"])
    assert len(sent_before_kill) == 1 + 2 * BEFORE_KILL  # the task and three tool turns
    sid = newest_session(work)

    stub_api.enqueue(Reply(text="It says: remember the milk."))
    env = {"MODEL_ID": "claude-test", "ANTHROPIC_BASE_URL": stub_api.url}
    args = ["run", "Go on.", "--resume", sid, "--workdir", str(work)]
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 0, result.output + result.stderr
    assert result.stdout.endswith("It says: remember the milk.\n")
    first_after = without_cache_marks(stub_api.bodies[BEFORE_KILL + 1]["messages"])
    assert first_after[: len(sent_before_kill)] == sent_before_kill
    assert "Go on." in json.dumps(first_after[len(sent_before_kill) :])


def test_resuming_a_session_that_a_live_run_writes_is_one_clear_error(
    stub_api: StubAPI, work: Path
) -> None:
    model = Hanging()
    stub_api.enqueue(*[model] * (BEFORE_KILL + 1))
    child = start_run(work, stub_api, "What does notes.txt say?")
    try:
        wait_for(lambda: len(stub_api.bodies) == BEFORE_KILL + 1, "the request held open")
        sid = newest_session(work)
        env = {"MODEL_ID": "claude-test", "ANTHROPIC_BASE_URL": stub_api.url}
        args = ["run", "Go on.", "--resume", sid, "--workdir", str(work)]
        result = CliRunner().invoke(main, args, env=env)
        assert result.exit_code == 1
        (line,) = result.stderr.splitlines()
        assert f"process {child.pid}" in line and "being written" in line
        assert len(stub_api.bodies) == BEFORE_KILL + 1  # the second run sent nothing
    finally:
        child.kill()
        child.wait(timeout=30)
        model.release.set()
