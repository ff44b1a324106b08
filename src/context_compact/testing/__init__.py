"""Test a loop offline: a scripted model, a store that fails on purpose, workloads. Public API.

Everything an application (or this project's tests) needs to drive a ``Compactor`` or the
agent loop without a network, an API key or a disk that can fill up:

    from context_compact.testing import ScriptedProvider, FaultyStore, MemoryStore
    model = ScriptedProvider(["hello", tool_call("bash", {"cmd": "ls"}), "done"])
    store = FaultyStore(MemoryStore(), fail={"save_blob"}, skip=2, times=1)

- ``model.py``: ``ScriptedProvider``, a Provider that plays back a script (replies, tool
  calls, exceptions, callables) and records every call; ``text_reply``, ``tool_call``,
  ``tool_calls`` build its steps. It raises ``ScriptExhausted`` past the end and
  ``FakeContextOverflow`` above its ``context_window``.
- ``faulty.py``: ``FaultyStore`` wraps a real store and fails the calls you name (``WRITES``,
  ``FILES`` or any set), ``disk_full()`` and ``read_only()`` being the usual errors.
- ``MemoryStore`` (``store/memory.py``): the store of a test, nothing on disk.
- ``fakes.py``: ``BenchSummarizer``, a deterministic summarizer of realistic length that
  counts its calls (no model).
- ``workload.py``: ``synthetic_session(turns, seed)``, a seeded coding session whose every
  tool result carries a planted fact, so a test can tell what is in view, recoverable or lost.
- ``script.py``: ``Script``, any session as a replay drives it (``from_workload``,
  ``from_session`` for a recorded one); ``trajectories.py``: ``default_trajectories()``, where
  the recorded sessions are.
- ``replay.py``: ``replay(script, policy, store)`` drives a session through a policy call by
  call as an agent loop would and measures it: tokens sent, cache reuse and cost
  (``summary_cost.py``), requests the Messages API would refuse (``api_check.py``), and, at
  the end, every needle's ``reach`` (``reach.py``): in the view, recoverable through a path the
  store issued, or lost.

Invariants: nothing here reaches the network or reads the clock to decide; the same script,
seed and calls give the same replies, sessions and failures. The package is the layer of the
engine: it imports the library's lower layers only, and nothing in the library imports it but
the demo, the CLI's ``compact`` (a recorded session as a script) and the bench. The modules
listed are loaded when imported by name; ``import context_compact.testing`` loads the first
four.
"""

from ..store.memory import MemoryStore
from .fakes import BenchSummarizer
from .faulty import FILES, WRITES, FaultyStore, disk_full, read_only
from .model import (
    FakeContextOverflow,
    ScriptedProvider,
    ScriptExhausted,
    estimate_tokens,
    text_reply,
    tool_call,
    tool_calls,
)
from .workload import Turn, Workload, result_size, result_text, synthetic_session

__all__ = [
    "FILES",
    "WRITES",
    "BenchSummarizer",
    "FakeContextOverflow",
    "FaultyStore",
    "MemoryStore",
    "ScriptExhausted",
    "ScriptedProvider",
    "Turn",
    "Workload",
    "disk_full",
    "estimate_tokens",
    "read_only",
    "result_size",
    "result_text",
    "synthetic_session",
    "text_reply",
    "tool_call",
    "tool_calls",
]
