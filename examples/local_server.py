"""An agent loop on a local OpenAI-compatible server (llama.cpp, Ollama, vLLM, LM Studio), under
a model name no table of ours knows. The window is the server's: CONTEXT_LIMIT when you set
it, else what the server says of itself (llama.cpp /props, vLLM /v1/models, Ollama, LM
Studio), else learned from its first refusal (the drop-in client adopts the window a refusal
states; until then a window of 200,000 tokens is assumed, and a warning says so).

    llama-server -m model.gguf -c 8192 --port 8080 --jinja     # or ollama serve, vllm serve...
    export OPENAI_BASE_URL=http://127.0.0.1:8080/v1 MODEL_ID=my-local-model
    python examples/local_server.py "count the lines of every Python file here"
"""

import json
import os
import subprocess
import sys

from openai import OpenAI

from context_compact import Compactor, Policy, SqliteStore
from context_compact.integrations import compacting
from context_compact.providers.local import discover_window
from context_compact.tools import ReadBack, openai_tools

request = sys.argv[1] if len(sys.argv) > 1 else "count the lines of every Python file here"
base_url = os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
model = os.environ.get("MODEL_ID", "my-local-model")
REPLY = 1_024  # max_tokens: the room each request leaves for the reply

# The window: yours, else the server's own word (None when it says nothing).
found = discover_window(base_url, model)
if os.environ.get("CONTEXT_LIMIT"):
    policy = Policy.default(model=model, context_limit=int(os.environ["CONTEXT_LIMIT"]))
elif found is not None:
    print(f"the server's window: {found.tokens:,} tokens ({found.source})", file=sys.stderr)
    policy = Policy.default(model=model, context_limit=found.tokens - REPLY)
else:
    policy = Policy.default(model=model)  # learned from the server's first refusal

compactor = Compactor(policy, SqliteStore(".context-compact/sessions.db", root="."))
key = os.environ.get("OPENAI_API_KEY", "no-key-for-a-local-server")
client = compacting(OpenAI(base_url=base_url, api_key=key), compactor)
read_back = ReadBack(compactor, root=".")
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


def run_tool(call):
    """One tool call of the reply: its output."""
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
    reply = client.chat.completions.create(
        model=model, max_tokens=REPLY, tools=[BASH, *openai_tools()], messages=messages
    )
    message = reply.choices[0].message
    messages.append(message.model_dump(exclude_none=True))
    if not message.tool_calls:
        break
    for call in message.tool_calls:
        messages.append({"role": "tool", "tool_call_id": call.id, "content": run_tool(call)})
print(message.content)
if compactor.window is not None:
    print(f"the window the server stated: {compactor.window[0]:,} tokens", file=sys.stderr)
