"""The drop-in client: the Anthropic SDK's own tool loop, as its docs write it, with one line
changed. Every request the loop sends is compacted first; nothing else changes.

    export ANTHROPIC_API_KEY=...
    python examples/dropin_client.py
"""

import subprocess

import anthropic

from context_compact import Compactor, Policy, SqliteStore
from context_compact.integrations import compacting

compactor = Compactor(Policy.default(model="claude-sonnet-5-5"), SqliteStore("sessions.db"))
client = compacting(anthropic.Anthropic(), compactor)  # the one changed line

tools = [
    {
        "name": "bash",
        "description": "Run a shell command.",
        "input_schema": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    }
]
messages = [{"role": "user", "content": "How many Python files are in this folder?"}]
while True:
    response = client.messages.create(
        model="claude-sonnet-5-5", max_tokens=4096, tools=tools, messages=messages
    )
    messages.append({"role": "assistant", "content": response.content})
    if response.stop_reason != "tool_use":
        break
    results = []
    for block in response.content:
        if block.type == "tool_use":
            ran = subprocess.run(block.input["command"], shell=True, capture_output=True, text=True)
            results.append(
                {"type": "tool_result", "tool_use_id": block.id, "content": ran.stdout + ran.stderr}
            )
    messages.append({"role": "user", "content": results})
print("".join(block.text for block in response.content if block.type == "text"))
