"""``context-compact run`` through one request and 1,000 tool calls, against the stub API.

The stub's model reads a file at every step and thinks at the start of each turn, as Claude
does: every request the agent sends must be one the Messages API accepts with thinking on
(``api_rules``), and fit the window; the run ends with the model's answer on stdout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from api_rules import final_turn_opener, thinking_request, violation_text
from cli_model import SETTINGS, is_summary_request
from context_compact.cli import main
from context_compact.sizing import TokenCounter
from stub_api import Reply, StubAPI, ToolCall

STEPS = 1_000
WINDOW = 8_000


class Reader:
    def __init__(self) -> None:
        self.step = 0
        self.counter = TokenCounter()
        self.problems: list[str] = []
        self.largest = 0

    def __call__(self, body: dict[str, Any]) -> Any:
        if is_summary_request(body):
            return Reply(text="Read parts 0-9 in turn; every part holds data lines.")
        messages = body["messages"]
        refused = violation_text(thinking_request(messages))
        if refused is not None:
            self.problems.append(refused)
        # The API's count of the prompt (messages, system prompt, tools), which the agent
        # calibrates its budget with.
        tokens = sum(self.counter.count(m) for m in messages)
        tokens += self.counter.text(json.dumps([body.get("system"), body.get("tools")]))
        self.largest = max(self.largest, tokens)
        thought = "Next file." if final_turn_opener(messages) is None else None
        if self.step >= STEPS:
            return Reply(text="Read all 1,000 parts.", thinking=thought, input_tokens=tokens)
        self.step += 1
        call = ToolCall("read_file", {"path": f"part_{self.step % 10}.txt"})
        return Reply(tool_calls=(call,), thinking=thought, input_tokens=tokens)


def test_run_keeps_a_thousand_step_turn_inside_its_window(
    stub_api: StubAPI, tmp_path: Path, monkeypatch: Any
) -> None:
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    for k in range(10):
        (tmp_path / f"part_{k}.txt").write_text(f"part {k}\n" + "data line\n" * 150)
    model = Reader()
    # Summary calls go through the same stub: room for them in the script.
    stub_api.enqueue(*[model] * (STEPS + 400))
    args = ["run", "Read the parts.", "--workdir", str(tmp_path), "--max-turns", str(STEPS + 1)]
    args += ["--context-limit", str(WINDOW), "--provider", "anthropic"]
    env = {"MODEL_ID": "test-model", "ANTHROPIC_BASE_URL": stub_api.url}
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 0, result.output[-2000:] + result.stderr[-2000:]
    assert result.stdout.rstrip().endswith("Read all 1,000 parts.")
    assert model.step == STEPS and model.problems == []
    assert model.largest <= WINDOW
