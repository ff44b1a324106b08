"""A LangChain v1 agent, compacted: the middleware compacts what the model is sent while the
graph state keeps the whole conversation, and the model can read back anything that left its
view (the read-back tools, as LangChain tools).

    pip install 'context-compact[langchain]' langchain-anthropic
    export ANTHROPIC_API_KEY=...
    python examples/langchain_agent.py "find why test_parser fails"
"""

import subprocess
import sys

from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic

from context_compact import Compactor, Policy, SqliteStore
from context_compact.integrations.langchain import CompactionMiddleware
from context_compact.tools import ReadBack

request = sys.argv[1] if len(sys.argv) > 1 else "find why test_parser fails"
store = SqliteStore(".context-compact/sessions.db", root=".")
compactor = Compactor(Policy.default(model="claude-sonnet-4-5"), store)
read_back = ReadBack(compactor, root=".")


def bash(command: str) -> str:
    """Run a shell command in the project."""
    ran = subprocess.run(command, shell=True, capture_output=True, text=True)
    return ran.stdout + ran.stderr


def read_file(path: str, offset: int = 1, limit: int = 2000) -> str:
    """Read a text file: any path, including the files the context names for results and
    messages that left it. Long files come in pages of lines: pass the offset the answer
    gives to continue."""
    return read_back.run("read_file", {"path": path, "offset": offset, "limit": limit})


def recall(query: str, offset: int = 0) -> str:
    """Search the whole conversation log, including everything compacted out of context, and
    get the original content back. query: text to find, a file path named in the context, or
    'message N'. Long answers are paged: pass the offset the answer gives."""
    return read_back.run("recall", {"query": query, "offset": offset})


agent = create_agent(
    ChatAnthropic(model="claude-sonnet-4-5", max_tokens=4096),
    [bash, read_file, recall],
    system_prompt="You are a coding agent. Use the tools.",
    middleware=[CompactionMiddleware(compactor)],
)
state = agent.invoke({"messages": [{"role": "user", "content": request}]})
print(state["messages"][-1].text)
