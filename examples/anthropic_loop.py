"""Your own agent loop on the Anthropic API, compacted: the README's loop, whole.

export ANTHROPIC_API_KEY=...      # ANTHROPIC_BASE_URL too, for another endpoint
python examples/anthropic_loop.py "find why test_parser fails and fix it"
"""

import subprocess
import sys

from context_compact import Compactor, LLMSummarizer, Policy, SqliteStore
from context_compact.providers.anthropic import AnthropicProvider
from context_compact.tools import ReadBack, anthropic_tools

request = sys.argv[1] if len(sys.argv) > 1 else "find why test_parser fails and fix it"
SYSTEM = "You are a coding agent. Use the tools to look at the project and change it."
BASH = {
    "name": "bash",
    "description": "Run a shell command in the project.",
    "input_schema": {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
}
TOOLS = [BASH, *anthropic_tools()]  # + read_file and recall: they read back what left the view

provider = AnthropicProvider("claude-sonnet-5-5", cache=True)  # the key from ANTHROPIC_API_KEY
store = SqliteStore(".context-compact/sessions.db", root=".")  # or FileStore("."), MemoryStore()
compactor = Compactor(Policy.default(model=provider.model), store, LLMSummarizer(provider))
read_back = ReadBack(compactor, root=".")


def run_tools(tool_uses):
    """Each tool call, a block {"type": "tool_use", "id", "name", "input"}, run: the
    tool_result blocks that answer them, in order."""
    results = []
    for use in tool_uses:
        if read_back.handles(use["name"]):
            output = read_back.run(use["name"], use["input"])
        else:
            ran = subprocess.run(
                use["input"]["command"], shell=True, capture_output=True, text=True, timeout=300
            )
            output = ran.stdout + ran.stderr
        results.append({"type": "tool_result", "tool_use_id": use["id"], "content": output})
    return results


messages = [{"role": "user", "content": request}]
while True:
    messages = compactor.prepare(messages, request)  # before every model call
    reply = provider.complete(system=SYSTEM, messages=messages, tools=TOOLS, max_tokens=8000)
    compactor.observe(reply.usage)  # real tokens calibrate the budget
    messages.append(reply.message)
    if not reply.tool_uses:
        break
    messages.append({"role": "user", "content": run_tools(reply.tool_uses)})
compactor.record(messages)  # the final answer is logged too
print(reply.text)
