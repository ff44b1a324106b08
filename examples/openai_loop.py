"""Your own agent loop on OpenAI Chat Completions, compacted: the OpenAI SDK's messages as
they are. Any OpenAI-compatible server works the same (vLLM, llama.cpp, Ollama): set
OPENAI_BASE_URL to it (a local one needs no key) and MODEL_ID to its model.

    export OPENAI_API_KEY=... MODEL_ID=gpt-5-mini
    python examples/openai_loop.py "find why test_parser fails and fix it"
"""

import json
import os
import subprocess
import sys

from openai import OpenAI

from context_compact import Compactor, MemoryStore, Policy
from context_compact.tools import ReadBack, openai_tools

request = sys.argv[1] if len(sys.argv) > 1 else "find why test_parser fails and fix it"
model = os.environ.get("MODEL_ID", "gpt-5-mini")
BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a shell command in the project.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}
TOOLS = [BASH, *openai_tools()]

client = OpenAI(api_key=os.environ.get("OPENAI_API_KEY", "no-key-for-a-local-server"))
compactor = Compactor(Policy.default(model=model), MemoryStore())  # or SqliteStore(...)
read_back = ReadBack(compactor, root=".")


def run_tool(call):
    """One tool call of the reply ({"id", "function": {"name", "arguments"}}): its output."""
    name, arguments = call.function.name, json.loads(call.function.arguments or "{}")
    if read_back.handles(name):
        return read_back.run(name, arguments)
    ran = subprocess.run(arguments["command"], shell=True, capture_output=True, text=True)
    return ran.stdout + ran.stderr


messages = [
    {"role": "system", "content": "You are a coding agent. Use the tools."},
    {"role": "user", "content": request},
]
while True:
    messages = compactor.prepare(messages, request)  # OpenAI messages in, OpenAI messages out
    reply = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
    message = reply.choices[0].message
    messages.append(message.model_dump(exclude_none=True))
    if not message.tool_calls:
        break
    for call in message.tool_calls:  # each answered by a "tool" message with its id
        messages.append({"role": "tool", "tool_call_id": call.id, "content": run_tool(call)})
print(message.content)
