"""A compaction engine of your own: registered by name, driven by the same Compactor.

This one keeps the newest tool results whole and replaces each older result longer than
``keep_chars`` with a one-line note naming the file that holds it, copied to the store
first: nothing leaves the request without a durable copy the model can read back. It
keeps no log of its own, so it builds on ``StatelessEngine``.

    python examples/custom_engine.py
"""

import tempfile
from dataclasses import dataclass

from context_compact import Compactor, FileStore, Policy
from context_compact.engine import Env, Message, StatelessEngine
from context_compact.registry import register


@dataclass(frozen=True)
class ElidePolicy:
    """The policy: the engine's registry name, its unit and limit, and its own knobs."""

    engine: str = "elide-old-results"
    unit: str = "tokens"
    context_limit: int = 100_000
    max_reactive_retries: int = 1
    keep_recent: int = 2
    keep_chars: int = 200


class ElideOldResults(StatelessEngine):
    name = "elide-old-results"

    def __init__(self, policy: ElidePolicy, env: Env) -> None:
        self.policy = policy
        self.env = env

    def prepare(self, messages: list[Message], request: str) -> list[Message]:
        results = [
            (m, b)
            for m, message in enumerate(messages)
            if isinstance(message["content"], list)
            for b, block in enumerate(message["content"])
            if block.get("type") == "tool_result"
        ]
        old = results[: max(0, len(results) - self.policy.keep_recent)]
        out = [dict(m) for m in messages]  # never modify the caller's list
        for m, b in old:
            block = out[m]["content"][b]
            text = block["content"] if isinstance(block["content"], str) else ""
            if len(text) <= self.policy.keep_chars:
                continue
            path = self.env.store.save_tool_result(block["tool_use_id"], text)
            content = list(out[m]["content"])
            content[b] = {**block, "content": f"[{len(text):,} characters moved to {path}]"}
            out[m]["content"] = content
        return out


register("elide-old-results", ElideOldResults, "older long tool results moved to files")

if __name__ == "__main__":
    messages: list[Message] = [{"role": "user", "content": "Read the three logs."}]
    for n in range(3):
        call = {"type": "tool_use", "id": f"call_{n}", "name": "read", "input": {"n": n}}
        result = {"type": "tool_result", "tool_use_id": f"call_{n}", "content": f"log {n} " * 100}
        messages += [
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
        ]

    store = FileStore(tempfile.mkdtemp())
    compactor = Compactor(ElidePolicy(keep_recent=2), store)
    # A registered engine is also reachable by name, as the CLI's --policy reaches it:
    assert Policy.named("elide-old-results").engine == "elide-old-results"
    view = compactor.prepare(messages, "Read the three logs.")

    note = view[2]["content"][0]["content"]
    print(note)
    path = note.split(" moved to ")[1].rstrip("]")
    assert store.read_text(path) == messages[2]["content"][0]["content"]  # nothing lost
    print("read back:", len(store.read_text(path)), "characters")
