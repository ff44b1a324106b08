"""The scripts in ``examples/`` run as written against the loopback stub API (the model's
side scripted), and the README's loop is the Anthropic one, line for line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import stub_api as s
from stub_api import Reply, StubAPI

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def code_of(script: Path) -> str:
    """A script without its docstring: what a page shows of it."""
    text = script.read_text(encoding="utf-8")
    return re.sub(r'\A""".*?"""\n\n', "", text, flags=re.DOTALL)


def test_the_readmes_loop_is_the_anthropic_example() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.DOTALL)
    assert code_of(EXAMPLES / "anthropic_loop.py") in blocks


def run_example(name: str, env: dict[str, str], cwd: Path, *args: str) -> str:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "OPENAI"))}
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "src"), environment.get("PYTHONPATH", "")]
    )
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        cwd=cwd,
        env={**environment, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


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


def test_the_store_backend_example_compacts_resumes_and_recalls_on_its_own_store(
    tmp_path: Path,
) -> None:
    out = run_example("kv_store.py", {}, tmp_path, str(tmp_path))
    assert "resumed to the same view" in out
    found = re.search(r"facts found by recall: (\d+) of (\d+)", out)
    assert found is not None and found[1] == found[2] and int(found[1]) > 0
    events = re.search(r"compaction events: (\d+)", out)
    assert events is not None and int(events[1]) > 0  # the session was compacted on it
    assert (tmp_path / "store.dat").stat().st_size > 0  # dbm's file: the store wrote there
    guide = (ROOT / "docs" / "store-backend.md").read_text(encoding="utf-8")
    shown = re.findall(r"```\n(compaction events.*?)```", guide, flags=re.DOTALL)
    assert shown == [out]  # the guide shows what it prints


def test_the_store_backend_guide_quotes_the_example_as_written() -> None:
    guide = (ROOT / "docs" / "store-backend.md").read_text(encoding="utf-8")
    example = (EXAMPLES / "kv_store.py").read_text(encoding="utf-8")
    quoted = re.findall(r"```python\n(def .*?)```", guide, flags=re.DOTALL)
    assert quoted
    for code in quoted:
        assert textwrap.indent(code, "    ") in example
