"""CrewAI's crew loop as its docs write it (an ``Agent`` with a ``@tool`` and an ``LLM`` on an
OpenAI-compatible base URL, a ``Task``, ``Crew(...).kickoff()``) with
``CompactionHooks(...).register()``: 60 tool steps in one task at an 8,000-token window against
the stub, every model call compacted, nothing lost, two crews at once in two sessions; without
the hooks the same task is refused once its history passes the window.

crewai is not in the dev extra (its pins clash with the LiteLLM proxy's): these tests run
where it is installed (``pip install 'context-compact[crewai]'``; CI: ``.ci/crewai``, in a venv
of its own) and skip elsewhere, unless ``CC_REQUIRE_CREWAI=1``, where a missing crewai fails."""

from __future__ import annotations

import importlib.util
import os
import threading
from typing import Any

import pytest

if importlib.util.find_spec("crewai") is None:
    # CI runs these in a venv of their own (.ci/crewai) with CC_REQUIRE_CREWAI=1: a skip
    # there would hide a broken install.
    if os.environ.get("CC_REQUIRE_CREWAI") == "1":
        pytest.fail("CC_REQUIRE_CREWAI=1 but crewai is not installed", pytrace=False)
    pytest.skip(
        "crewai is not installed (pip install 'context-compact[crewai]'; not in [dev])",
        allow_module_level=True,
    )
# CrewAI's telemetry and traces reach the network when on; tests never do.
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
# Imported as importorskip does, its import-time warnings ignored (CrewAI's package raises an
# ImportWarning of its own making, which filterwarnings=error would make an error).
pytest.importorskip("crewai")

from crewai import LLM, Agent, Crew, Task
from crewai.tools import tool
from loop_helpers import Gate, replies, size
from window_loop import LIMIT, MODES, TURNS, compactor, history_tokens, lost, part

from context_compact import MemoryStore, Policy, check
from context_compact.formats import openai_chat
from context_compact.integrations.conversations import Conversations
from context_compact.integrations.crewai import CompactionHooks
from stub_api import StubAPI, openai_context_length_exceeded

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@tool("read_log")
def read_log(part_number: int) -> str:
    """Read one part of the service log."""
    return part(part_number)


def _replies(turns: int = TURNS, prefix: str = "call") -> list[Any]:
    return [
        type(r)(
            text=r.text if not r.tool_calls else None,
            tool_calls=tuple(
                type(c)(c.name, {"part_number": c.input["part"]}, id=c.id) for c in r.tool_calls
            ),
        )
        for r in replies(turns, prefix=prefix)
    ]


def _refusal(tokens: int, limit: int) -> Any:
    return openai_context_length_exceeded(limit, tokens)


def _crew(stub: StubAPI, task_text: str = "read the service log", **agent: Any) -> Crew:
    llm = LLM(model="openai/gpt-4o", base_url=stub.openai_url, api_key="sk-stub", max_retries=0)
    reader = Agent(
        role="reader",
        goal="read every part of the service log",
        backstory="You read service logs.",
        llm=llm,
        tools=[read_log],
        max_iter=TURNS + 5,
        verbose=False,
        **agent,
    )
    task = Task(description=task_text, expected_output="when every part is read", agent=reader)
    return Crew(agents=[reader], tasks=[task], verbose=False)


def _violations(bodies: list[Any]) -> list[str]:
    return [
        f"request {i}: {v}"
        for i, body in enumerate(bodies)
        for v in check(openai_chat.to_canonical(body["messages"])[1])
    ]


@pytest.fixture
def hooks_of() -> Any:
    made: list[CompactionHooks] = []

    def register(target: Any) -> CompactionHooks:
        hooks = CompactionHooks(target).register()
        made.append(hooks)
        return hooks

    yield register
    for hooks in made:
        hooks.unregister()


@pytest.mark.slow
def test_one_task_of_60_tool_steps_is_compacted_at_every_model_call(hooks_of: Any) -> None:
    gate = Gate(_replies(), MODES["equal"], _refusal)
    cc = compactor()
    hooks = hooks_of(cc)
    with StubAPI(*gate.script()) as stub:
        crew = _crew(stub)
        output = crew.kickoff()
    assert output.raw == "all parts read"
    assert hooks.errors == []
    bodies = stub.bodies
    assert gate.refused == 0
    assert len(bodies) == TURNS + 1
    assert _violations(bodies) == []
    sizes = [size(b) for b in bodies]
    assert max(sizes) <= LIMIT
    assert max(sizes[-5:]) < history_tokens() // 4
    assert hooks.compactor_for(crew.tasks[0]) is cc
    assert {e.stage for e in cc.events} & {"clear_old_results", "summarize"}
    assert lost(cc) == []


@pytest.mark.slow
def test_without_the_hooks_the_same_task_is_refused_once_its_history_passes_the_window() -> None:
    gate = Gate(_replies(), MODES["equal"], _refusal)
    with StubAPI(*gate.script()) as stub, pytest.raises(SystemExit, match="Context length"):
        _crew(stub, respect_context_window=False).kickoff()
    assert gate.refused == 1
    assert len(stub.bodies) < TURNS // 4


def test_each_response_s_usage_calibrates_the_budget(hooks_of: Any) -> None:
    cc = compactor()
    seen: list[Any] = []
    original = cc.observe
    cc.observe = lambda usage: (seen.append(usage), original(usage))[1]  # type: ignore[method-assign]
    hooks_of(cc)
    gate = Gate(_replies(4), LIMIT, _refusal)
    with StubAPI(*gate.script()) as stub:
        _crew(stub).kickoff()
        from crewai.events import crewai_event_bus

        crewai_event_bus.flush()
    assert [u["prompt_tokens"] for u in seen] == [size(b) for b in stub.bodies][: len(seen)]
    assert len(seen) >= len(stub.bodies) - 1


def test_two_crews_running_at_once_land_in_two_sessions(hooks_of: Any) -> None:
    conversations = Conversations(Policy.default(context_limit=LIMIT), MemoryStore())
    hooks = hooks_of(conversations)
    turns = 6

    def answer(body: Any) -> Any:
        task = next(m["content"] for m in body["messages"] if m["role"] == "user")
        name = "alpha" if "alpha" in task else "beta"
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        return _replies(turns, prefix=name)[done]

    crews: dict[str, Crew] = {}
    outputs: dict[str, str] = {}
    with StubAPI(*[answer] * (2 * (turns + 1))) as stub:
        for name in ("alpha", "beta"):
            crews[name] = _crew(stub, f"read the service log ({name})")

        def run(name: str) -> None:
            outputs[name] = crews[name].kickoff().raw

        threads = [threading.Thread(target=run, args=(n,)) for n in crews]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert outputs == {"alpha": "all parts read", "beta": "all parts read"}
    assert hooks.errors == []
    alpha = hooks.compactor_for(crews["alpha"].tasks[0])
    beta = hooks.compactor_for(crews["beta"].tasks[0])
    assert alpha is not beta and len(conversations) == 2
    assert alpha.recall("alpha").text and not alpha.recall("beta").text
    assert beta.recall("beta").text and not beta.recall("alpha").text


def test_a_failing_compaction_blocks_the_call_and_says_why(hooks_of: Any) -> None:
    cc = compactor()
    cc.format = "anthropic"  # a compactor that holds another format's conversation
    hooks = hooks_of(cc)
    with StubAPI(*_replies(2)) as stub, pytest.raises(Exception, match="context-compact"):
        _crew(stub).kickoff()
    assert stub.bodies == []
    assert len(hooks.errors) == 1 and "OpenAI chat messages" in str(hooks.errors[0])
