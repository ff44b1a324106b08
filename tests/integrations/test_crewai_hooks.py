"""CrewAI's crew loop as its docs write it (an ``Agent`` with a ``@tool`` and an ``LLM`` on an
OpenAI-compatible base URL, a ``Task``, ``Crew(...).kickoff()``) with
``CompactionHooks(...).register()``: 60 tool steps in one task at an 8,000-token window against
the stub, every model call compacted, nothing lost; a server whose window is half that refuses
once and the next call is the recovered view (CrewAI's own summary never runs); the async
kickoffs, a streaming LLM and an agent run without a task the same; two crews at once in two
sessions; a failing hook blocks the call, warned of and seen in CrewAI's own event; what CrewAI's
``use_better_compaction`` keeps out of the session. Without the hooks the same task is refused
once its history passes the window.

crewai is not in the dev extra (its pins clash with the LiteLLM proxy's): these tests run
where it is installed (``pip install 'context-compact[crewai]'``; CI: ``.ci/crewai``, in a venv
of its own) and skip elsewhere, unless ``CC_REQUIRE_CREWAI=1``, where a missing crewai fails."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
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
from crewai.events import crewai_event_bus
from crewai.events.types.hook_events import HookDispatchedEvent
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


@tool("read_dump")
def read_dump(part_number: int) -> str:
    """Read one part of the service's full dump."""
    return _dump(part_number)


def _dump(k: int) -> str:
    """A dump part: 9,000 to 18,000 characters, over CrewAI's deferral threshold below."""
    return part(k) + part(k).split("\n", 1)[1] * 2


def _replies(turns: int = TURNS, prefix: str = "call", name: str = "read_log") -> list[Any]:
    return [
        type(r)(
            text=r.text if not r.tool_calls else None,
            tool_calls=tuple(
                type(c)(name, {"part_number": c.input["part"]}, id=c.id) for c in r.tool_calls
            ),
        )
        for r in replies(turns, prefix=prefix)
    ]


def _refusal(tokens: int, limit: int) -> Any:
    return openai_context_length_exceeded(limit, tokens)


def _crew(
    stub: StubAPI,
    task_text: str = "read the service log",
    stream: bool = False,
    model: str = "gpt-4o",
    **agent: Any,
) -> Crew:
    llm = LLM(
        model=f"openai/{model}",
        base_url=stub.openai_url,
        api_key="sk-stub",
        max_retries=0,
        stream=stream,
    )
    reader = Agent(
        role="reader",
        goal="read every part of the service log",
        backstory="You read service logs.",
        llm=llm,
        tools=[read_log, read_dump],
        verbose=False,
        **{"max_iter": TURNS + 5, **agent},
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
@pytest.mark.parametrize("mode", ["equal", "below"])
def test_one_task_of_60_tool_steps_is_compacted_at_every_model_call(
    hooks_of: Any, mode: str
) -> None:
    limit = MODES[mode]
    gate = Gate(_replies(), limit, _refusal)
    cc = compactor()
    hooks = hooks_of(cc)
    with StubAPI(*gate.script()) as stub:
        crew = _crew(stub)
        output = crew.kickoff()
    assert output.raw == "all parts read"
    assert hooks.errors == []
    bodies = stub.bodies
    # Every request is one of the task's: CrewAI's own summary never called the model.
    assert len(bodies) == TURNS + 1 + gate.refused
    assert _violations(bodies) == []
    sizes = [size(b) for b in bodies]
    if mode == "equal":
        assert gate.refused == 0
        assert max(sizes) <= LIMIT
    else:
        # The server's window is half the compactor's limit: the first refusal states it, the
        # next call is the recovered view, and the session keeps to that window from then on.
        assert gate.refused == 1
        refused = next(i for i, n in enumerate(sizes) if n > limit)
        assert sizes[refused + 1] <= limit
        assert max(sizes[refused + 1 :]) <= limit
        assert cc.window is not None and cc.window[0] == limit
    assert max(sizes[-5:]) < history_tokens() // 4
    assert hooks.compactor_for(crew.tasks[0]) is cc
    assert {e.stage for e in cc.events} & {"clear_old_results", "summarize"}
    assert lost(cc) == []


SHORT = 12
"""Steps of the short loops: their results together pass the window, so each must compact."""


def _short_loop(gate: Gate, cc: Any, hooks: CompactionHooks, bodies: list[Any]) -> None:
    """What every short loop holds: compacted at each call (a refused one recovered by the
    next), nothing lost."""
    assert history_tokens(SHORT) > LIMIT
    assert hooks.errors == []
    assert len(bodies) == SHORT + 1 + gate.refused
    assert _violations(bodies) == []
    sizes = [size(b) for b in bodies]
    assert [n for i, n in enumerate(sizes) if n > gate.limit and sizes[i + 1] > gate.limit] == []
    assert max(sizes) < history_tokens(SHORT)
    assert len(cc.events) > 0
    assert lost(cc, SHORT) == []


def _usage_taken(seen: list[Any], bodies: list[Any]) -> None:
    """Each usage taken is the count of the request it answered, in order, and the last one's
    always (no newer call to be late for); one whose event came in after the next call was
    prepared (CrewAI's handlers run on a thread pool) is left out, not taken for that call."""
    sizes = [size(b) for b in bodies]
    taken = [u["prompt_tokens"] for u in seen]
    assert taken and taken[-1] == sizes[-1]
    rest = iter(sizes)
    assert all(n in rest for n in taken), (taken, sizes)


@pytest.mark.parametrize("mode", ["equal", "below"])
@pytest.mark.parametrize("start", ["akickoff", "kickoff_async"])
def test_an_async_kickoff_is_compacted_and_its_refusal_recovered(
    hooks_of: Any, start: str, mode: str
) -> None:
    gate = Gate(_replies(SHORT), MODES[mode], _refusal)
    cc = compactor()
    hooks = hooks_of(cc)
    with StubAPI(*gate.script()) as stub:
        crew = _crew(stub, max_iter=SHORT + 5)
        output = asyncio.run(getattr(crew, start)())
    assert output.raw == "all parts read"
    _short_loop(gate, cc, hooks, stub.bodies)
    assert gate.refused == (0 if mode == "equal" else 1)


def test_an_agent_run_without_a_task_recovers_its_refusal(hooks_of: Any) -> None:
    gate = Gate(_replies(SHORT), MODES["below"], _refusal)
    cc = compactor()
    hooks = hooks_of(cc)
    with StubAPI(*gate.script()) as stub:
        agent = _crew(stub, max_iter=SHORT + 5).agents[0]
        output = agent.kickoff("read the service log")
    assert output.raw == "all parts read"
    _short_loop(gate, cc, hooks, stub.bodies)
    assert gate.refused == 1
    assert cc.window is not None and cc.window[0] == MODES["below"]


def test_a_streaming_llm_is_compacted_and_its_usage_observed(hooks_of: Any) -> None:
    gate = Gate(_replies(SHORT), LIMIT, _refusal)
    cc = compactor()
    seen: list[Any] = []
    original = cc.observe
    cc.observe = lambda usage: (seen.append(usage), original(usage))[1]  # type: ignore[method-assign]
    hooks = hooks_of(cc)
    with StubAPI(*gate.script()) as stub:
        output = _crew(stub, stream=True, max_iter=SHORT + 5).kickoff()
        crewai_event_bus.flush()
    assert output.raw == "all parts read"
    assert all(body.get("stream") is True for body in stub.bodies)
    _short_loop(gate, cc, hooks, stub.bodies)
    assert gate.refused == 0
    # Usage comes in the stream's last chunk.
    _usage_taken(seen, stub.bodies)


@pytest.mark.parametrize("deferral", [True, False])
def test_a_result_crewai_defers_is_outside_the_session_unless_its_deferral_is_off(
    hooks_of: Any, deferral: bool
) -> None:
    """CrewAI's ``use_better_compaction`` moves a result over a quarter of the window it
    believes the model has (about 6,960 tokens for this fine-tuned model's 8,192) to a
    temporary file of the run, before any hook sees it; turned off, the result comes into the
    history, where the compactor files it durably."""
    steps = 3
    gate = Gate(_replies(steps, name="read_dump"), LIMIT, _refusal)
    cc = compactor()
    hooks = hooks_of(cc)
    with StubAPI(*gate.script()) as stub:
        crew = _crew(stub, model="ft:gpt-4-0613", use_better_compaction=deferral)
        assert crew.kickoff().raw == "all parts read"
    assert hooks.errors == [] and gate.refused == 0
    assert len(_dump(0)) // 4 > crew.agents[0].llm.get_context_window_size() // 4
    kept = [_dump(k) in cc.recall(f"needle-{k:03d}", limit=50_000).text for k in range(steps)]
    assert kept == [not deferral] * steps


def test_unregister_gives_the_llm_its_own_summary_back(hooks_of: Any) -> None:
    gate = Gate(_replies(2), LIMIT, _refusal)
    hooks = hooks_of(compactor())
    with StubAPI(*gate.script()) as stub:
        crew = _crew(stub)
        crew.kickoff()
    llm = crew.agents[0].llm
    assert "summarize_messages" in vars(llm)
    hooks.unregister()
    assert "summarize_messages" not in vars(llm)
    assert llm.summarize_messages.__func__ is type(llm).summarize_messages


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
        crewai_event_bus.flush()
    _usage_taken(seen, stub.bodies)


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


def test_a_failing_compaction_blocks_the_call_and_says_why(
    hooks_of: Any, caplog: pytest.LogCaptureFixture
) -> None:
    cc = compactor()
    cc.format = "anthropic"  # a compactor that holds another format's conversation
    hooks = hooks_of(cc)
    aborted: list[Any] = []

    def dispatched(source: Any, event: Any) -> None:
        if event.outcome == "aborted":
            aborted.append(event)

    crewai_event_bus.register_handler(HookDispatchedEvent, dispatched)
    try:
        with (
            caplog.at_level(logging.WARNING, logger="context_compact.integrations"),
            StubAPI(*_replies(2)) as stub,
            pytest.raises(Exception, match="context-compact"),
        ):
            _crew(stub).kickoff()
        crewai_event_bus.flush()
    finally:
        crewai_event_bus.off(HookDispatchedEvent, dispatched)
    assert stub.bodies == []
    assert len(hooks.errors) == 1 and "OpenAI chat messages" in str(hooks.errors[0])
    # Not silent where CrewAI swallows a hook's exception: a warning, and CrewAI's own event.
    warned = [r.getMessage() for r in caplog.records if r.name == "context_compact.integrations"]
    assert len(warned) == 1 and "the call is blocked" in warned[0]
    assert "OpenAI chat messages" in warned[0]
    assert [(e.interception_point, e.abort_source) for e in aborted] == [
        ("pre_model_call", "CompactionHooks")
    ]
    assert "OpenAI chat messages" in (aborted[0].abort_reason or "")
