"""The scripts in ``examples/`` run as written against the loopback stub API (the model's
side scripted), and the loop of the README and of the "Your loop" page is the Anthropic one,
line for line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import stub_api as s
from context_compact import check
from stub_api import Reply, StubAPI

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def code_of(script: Path) -> str:
    """A script without its docstring: what a page shows of it."""
    text = script.read_text(encoding="utf-8")
    return re.sub(r'\A""".*?"""\n\n', "", text, flags=re.DOTALL)


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_the_readmes_loop_is_the_anthropic_example() -> None:
    assert code_of(EXAMPLES / "anthropic_loop.py") in python_blocks(ROOT / "README.md")


def test_the_your_loop_page_opens_with_the_anthropic_example_whole() -> None:
    assert python_blocks(ROOT / "docs/loop.md")[0] == code_of(EXAMPLES / "anthropic_loop.py")


def run_script(
    name: str, env: dict[str, str], cwd: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """``examples/NAME`` run to its end, as a user runs it; its output."""
    environment = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC", "OPENAI", "MODEL_ID", "CONTEXT_LIMIT"))
    }
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "src"), environment.get("PYTHONPATH", "")]
    )
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        cwd=cwd,
        env={**environment, **env},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def run_example(name: str, env: dict[str, str], cwd: Path, *args: str) -> str:
    return run_script(name, env, cwd, *args).stdout


def test_the_anthropic_loop_runs_its_tools_and_prints_the_answer(tmp_path: Path) -> None:
    with StubAPI() as stub:
        stub.enqueue(
            Reply(text="Looking.", tool_calls=(s.ToolCall("bash", {"command": "echo hello"}),)),
            Reply(text="Reading.", tool_calls=(s.ToolCall("read_file", {"path": "notes.txt"}),)),
            Reply(text="All done."),
        )
        (tmp_path / "notes.txt").write_text("the note\n", encoding="utf-8")
        env = {"ANTHROPIC_BASE_URL": stub.url, "ANTHROPIC_API_KEY": "test-key"}
        out = run_example("anthropic_loop.py", env, tmp_path, "say hello")
        sent = json.dumps([r.body for r in stub.requests])
    assert out.strip() == "All done."
    assert "hello\\n" in sent and "the note" in sent  # the tools' results reached the model
    assert (tmp_path / ".context-compact" / "sessions.db").is_file()


def test_the_openai_loop_runs_its_tools_and_prints_the_answer(tmp_path: Path) -> None:
    with StubAPI() as stub:
        stub.enqueue(
            Reply(text="Looking.", tool_calls=(s.ToolCall("bash", {"command": "echo hello"}),)),
            Reply(text="Reading.", tool_calls=(s.ToolCall("read_file", {"path": "notes.txt"}),)),
            Reply(text="All done."),
        )
        (tmp_path / "notes.txt").write_text("the note\n", encoding="utf-8")
        env = {"OPENAI_BASE_URL": stub.openai_url, "OPENAI_API_KEY": "k", "MODEL_ID": "gpt-test"}
        out = run_example("openai_loop.py", env, tmp_path, "say hello")
        sent = json.dumps([r.body for r in stub.requests])
    assert out.strip() == "All done."
    assert "hello\\n" in sent and "the note" in sent


def test_the_drop_in_client_runs_the_sdks_own_loop(tmp_path: Path) -> None:
    with StubAPI() as stub:
        stub.enqueue(
            Reply(text="Counting.", tool_calls=(s.ToolCall("bash", {"command": "echo 3"}),)),
            Reply(text="There are 3."),
        )
        env = {"ANTHROPIC_BASE_URL": stub.url, "ANTHROPIC_API_KEY": "test-key"}
        out = run_example("dropin_client.py", env, tmp_path)
        sent = json.dumps([r.body for r in stub.requests])
    assert out.strip() == "There are 3."
    assert "3\\n" in sent and (tmp_path / "sessions.db").is_file()


# -- a local server: a model name no table knows, the window the server's ------------------

LOCAL_WINDOW = 12_000
LOCAL_TURNS = 40


class LocalServer:
    """A llama.cpp server at a 12,000-token window (4 characters a token), refusing above it
    in its own words; the model reads a long log a part at a time, then answers."""

    def __init__(self) -> None:
        self.step, self.refused = 0, 0

    def __call__(self, body: dict[str, Any]) -> Any:
        tokens = len(json.dumps(body)) // 4
        if tokens > LOCAL_WINDOW:
            self.refused += 1
            return s.llamacpp_exceed_context(tokens, LOCAL_WINDOW)
        self.step += 1
        if self.step > LOCAL_TURNS:
            return Reply(text="The log is read.", input_tokens=tokens)
        first = 40 * (self.step - 1) + 1
        command = f"sed -n '{first},{first + 39}p' service.log"
        return Reply(tool_calls=(s.ToolCall("bash", {"command": command}),), input_tokens=tokens)


def run_local(tmp_path: Path, routes: dict[str, Any], **env: str) -> tuple[LocalServer, str, str]:
    lines = (f"{n:06d} worker ok: request served in {n % 97} ms\n" for n in range(1, 2_000))
    (tmp_path / "service.log").write_text("".join(lines), encoding="utf-8")
    server = LocalServer()
    with StubAPI(*[server] * (2 * LOCAL_TURNS), routes=routes) as stub:
        environment = {"OPENAI_BASE_URL": stub.openai_url, "MODEL_ID": "my-local-model", **env}
        result = run_script("local_server.py", environment, tmp_path, "read service.log")
    assert server.step == LOCAL_TURNS + 1  # the whole loop ran
    return server, result.stdout, result.stderr


def test_the_local_server_example_keeps_to_the_window_the_server_states(tmp_path: Path) -> None:
    server, out, err = run_local(tmp_path, s.llamacpp_props(LOCAL_WINDOW))
    assert out.strip() == "The log is read."
    assert server.refused == 0
    assert f"the server's window: {LOCAL_WINDOW:,} tokens" in err
    assert "UnknownModelWarning" not in err


def test_the_local_server_example_learns_the_window_from_the_first_refusal(tmp_path: Path) -> None:
    server, out, err = run_local(tmp_path, {})
    assert out.strip() == "The log is read."
    # The log alone is more than the window: refused once, then held to what it stated.
    assert server.refused == 1
    assert f"the window the server stated: {LOCAL_WINDOW:,} tokens" in err
    assert "UnknownModelWarning" in err and "my-local-model" in err  # said, once
    assert err.count("UnknownModelWarning") == 1


def test_the_local_server_example_takes_the_limit_you_give(tmp_path: Path) -> None:
    server, out, err = run_local(tmp_path, {}, CONTEXT_LIMIT=str(LOCAL_WINDOW - 2_000))
    assert out.strip() == "The log is read."
    assert server.refused == 0
    assert "UnknownModelWarning" not in err


def test_the_langchain_agent_runs_its_tools_and_prints_the_answer(tmp_path: Path) -> None:
    pytest.importorskip("langchain_anthropic")
    (tmp_path / "notes.txt").write_text("the note\n", encoding="utf-8")
    with StubAPI() as stub:
        stub.enqueue(
            Reply(tool_calls=(s.ToolCall("bash", {"command": "echo $((6*7)) pelicans"}),)),
            Reply(tool_calls=(s.ToolCall("read_file", {"path": "notes.txt"}),)),
            Reply(tool_calls=(s.ToolCall("recall", {"query": "42 pelicans"}),)),
            Reply(text="All done."),
        )
        env = {
            "ANTHROPIC_BASE_URL": stub.url,
            "ANTHROPIC_API_KEY": "test-key",
            "LANGSMITH_TRACING": "false",
        }
        out = run_example("langchain_agent.py", env, tmp_path, "say hello")
        bodies = [r.body for r in stub.requests]
    assert out.strip() == "All done."
    assert [check(b["messages"]) for b in bodies] == [[]] * 4
    assert "42 pelicans" in json.dumps(bodies[1]) and "the note" in json.dumps(bodies[2])
    recalled = json.dumps(bodies[3]["messages"][-1])
    # The recall's answer: its head names the query, its text the bash output it found.
    assert "nothing found" not in recalled and recalled.count("42 pelicans") >= 2
    assert (tmp_path / ".context-compact" / "sessions.db").is_file()


def test_the_custom_engine_example_moves_old_results_to_files_it_reads_back(
    tmp_path: Path,
) -> None:
    out = run_example("custom_engine.py", {}, tmp_path)
    assert "characters moved to" in out and "read back: 600 characters" in out


def test_the_extending_guide_shows_the_example_engine_as_it_runs() -> None:
    guide = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", guide, flags=re.DOTALL)
    example = (EXAMPLES / "custom_engine.py").read_text(encoding="utf-8")
    assert blocks and blocks[0].strip() in example


def test_the_example_engine_loses_nothing_in_a_replayed_session(tmp_path: Path) -> None:
    sys.path.insert(0, str(EXAMPLES))
    try:
        from custom_engine import ElidePolicy  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(EXAMPLES))
    from context_compact import Compactor, FileStore
    from context_compact.registry import REGISTRY
    from context_compact.testing.replay import replay
    from context_compact.testing.workload import synthetic_session

    store = FileStore(str(tmp_path))
    try:
        compactor = Compactor(ElidePolicy(context_limit=20_000), store)
        run = replay(compactor, synthetic_session(40, seed=1), store=store, root=store.root)
    finally:  # the example registered its engine in this process: the next test sees ours only
        REGISTRY.engines.pop("elide-old-results", None)
        REGISTRY.names.remove("elide-old-results")
    assert run.needles > 0 and run.lost == 0 and run.violations == 0
    assert run.recoverable > run.in_view  # most results left the view, each to a file
