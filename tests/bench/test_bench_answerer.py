"""Probes answered by a model: a scripted model on the stub OpenAI server, the real SDK."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import stub_api as s
from context_compact.sizing import TokenCounter
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.script import Script
from context_compact_bench.answer_counts import AnswerCounts, render_answers
from context_compact_bench.answerer import (
    MAX_TOOL_CALLS,
    Answerer,
    AnswererConfig,
    api_url,
    fit,
    paired,
    with_question,
)
from context_compact_bench.pricing import Pricing
from context_compact_bench.probes import KINDS, OUTCOMES
from context_compact_bench.run import run_one
from stub_api import Reply, StubAPI, ToolCall

Message = dict[str, Any]
Body = dict[str, Any]

ERROR = "2026-11-03 12:10:00 ERROR parser.schema: rate table missing key 'std'"
BIG = "\n".join(f"building unit {i} of the parser ... ok" for i in range(150))


def use(tool_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": args}


def said(text: str, *uses: dict[str, Any]) -> Message:
    return {"role": "assistant", "content": [{"type": "text", "text": text}, *uses]}


def gave(tool_id: str, text: str) -> Message:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": text}],
    }


def session() -> Script:
    """A request, a build whose long output ends in an error, short reads, an edit, more reads."""
    steps: list[tuple[Message, ...]] = [
        (
            said("Running the build.", use("b1", "bash", command="make build")),
            gave("b1", f"{BIG}\n{ERROR}\nbuild stopped"),
        ),
    ]
    for i in range(2, 24):
        steps.append(
            (
                said(f"Checking file {i}.", use(f"b{i}", "bash", command=f"cat notes/f{i}.txt")),
                gave(f"b{i}", f"line {i} of a short file, nothing to see here\n" * 30),
            )
        )
    steps.append(
        (
            said(
                "Fixing it.",
                use("e1", "edit_file", path="src/rates.py", old_text="a", new_text="b"),
            ),
            gave("e1", "Edited src/rates.py"),
        )
    )
    for i in range(24, 28):
        steps.append(
            (
                said(f"Checking file {i}.", use(f"b{i}", "bash", command=f"cat notes/f{i}.txt")),
                gave(f"b{i}", f"line {i} of a short file, nothing to see here\n" * 30),
            )
        )
    request = "Make the build pass. Don't change the public API of the parser."
    head = ({"role": "user", "content": request},)
    return Script("answerer-test", head, tuple(steps), (request,) * (len(steps) + 1), ())


# -- scripted models: fn(request body) -> reply -------------------------------------------------


def texts(body: Body, roles: tuple[str, ...] = ("user", "assistant", "tool")) -> str:
    """Every text of the request's messages of ``roles``."""
    out = []
    for message in body["messages"]:
        if message.get("role") not in roles:
            continue
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [str(p.get("text", "")) for p in content if isinstance(p, dict)]
    return "\n".join(out)


def question(body: Body) -> str:
    return texts(body, ("user",)).rsplit("Question about the work so far:", 1)[-1]


def loop_results(body: Body) -> list[Message]:
    """The tool messages after the question (the answerer's own loop, not the view's)."""
    messages = body["messages"]
    at = max(i for i, m in enumerate(messages) if "Question about" in texts({"messages": [m]}))
    return [m for m in messages[at:] if m.get("role") == "tool"]


def from_view(body: Body) -> Reply:
    """Answers with everything it was shown: right exactly when the answer was in the prompt."""
    return Reply(text=texts(body))


def wrong(body: Body) -> Reply:
    return Reply(text="I do not remember.")


def recalling(body: Body) -> Reply:
    """Searches the log for what the question names (the text in backticks), follows its
    pages, then answers with what the searches gave."""
    asked_at = max(
        i
        for i, m in enumerate(body["messages"])
        if "Question about the work" in texts({"messages": [m]})
    )
    tools = [m for m in body["messages"][asked_at:] if m.get("role") == "tool"]
    key = re.search(r"`([^`]+)`", question(body))
    if key is None:
        return from_view(body)
    more = re.search(r"more from offset=(\d+)", str(tools[-1]["content"])) if tools else None
    if not tools or (more and len(tools) < MAX_TOOL_CALLS and body.get("tools")):
        offset = int(more.group(1)) if more else 0
        return Reply(tool_calls=(ToolCall("recall", {"query": key.group(1), "offset": offset}),))
    return Reply(text="\n".join(str(t["content"]) for t in tools))


def always_tools(body: Body) -> Reply:
    """Asks for a file every time it is offered tools; answers "done" when it is not."""
    if body.get("tools"):
        return Reply(tool_calls=(ToolCall("read_file", {"path": "/memory/nothing"}),))
    return Reply(text="done")


def forever(fn: Callable[[Body], Reply], n: int = 300) -> list[Callable[[Body], Reply]]:
    return [fn] * n


def asked(
    stub: StubAPI, strategy: str = "default", budget: int = 4_000, most: int = 10, **options: Any
) -> tuple[AnswerCounts, Answerer, Any]:
    answerer = Answerer(AnswererConfig(stub.openai_url, "stub-model", most, **options))
    try:
        row, _ = run_one(strategy, session(), budget, 0, Pricing(), True, answerer)
    finally:
        answerer.close()
    assert row.answers is not None and row.probes is not None
    return AnswerCounts.from_dict(row.answers), answerer, row


def totals(counts: AnswerCounts) -> dict[str, int]:
    return {name: counts.total(name) for name in ("asked", "right", "in_prompt", "errors")}


# -- the tests ----------------------------------------------------------------------------------


def test_a_model_that_answers_from_its_prompt_is_right_exactly_where_the_answer_was_in_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Summaries made at the trigger: with a summary made ahead, the edit this session makes
    # falls in the few messages after the range fixed ahead, whose short note does not name
    # it, and no probe's answer is left in the prompt (a gap of summaries made ahead, stated
    # in docs/policies.md); this test is about scoring what is in the prompt.
    monkeypatch.setattr(BenchSummarizer, "model_calls", False, raising=False)
    with StubAPI(*forever(from_view)) as stub:
        counts, answerer, _ = asked(stub)
    got = totals(counts)
    assert got["asked"] > 0 and got["errors"] == 0
    assert got["right"] == got["in_prompt"] > 0
    assert counts.total("recall") > 0  # the error left the view: the model-free judge recalls it
    assert answerer.requests == got["asked"]  # one request a probe: it never called a tool
    sent = stub.bodies[0]
    assert sent["model"] == "stub-model" and sent["max_tokens"] > 0
    assert {t["function"]["name"] for t in sent["tools"]} == {"read_file", "recall"}
    assert sent["messages"][0]["role"] == "system"
    assert "Question about the work so far:" in texts(sent, ("user",))


def test_a_model_that_calls_recall_finds_what_left_the_view() -> None:
    with StubAPI(*forever(recalling)) as stub:
        counts, _, _ = asked(stub)
    error = counts.by_kind["error"]
    assert error["asked"] == 1 and error["recall"] == 1
    assert error["recall_right"] == 1  # found by its own recall calls, pages followed
    assert error["tool_calls"] >= 1
    recalls = [
        json.loads(c["function"]["arguments"])
        for b in stub.bodies
        for m in b["messages"]
        for c in m.get("tool_calls") or []
    ]
    assert {"query": "make build", "offset": 0} in recalls


def test_a_model_that_answers_wrong_is_counted_wrong_and_spelled_out() -> None:
    with StubAPI(*forever(wrong)) as stub:
        counts, _, _ = asked(stub)
    got = totals(counts)
    assert got["asked"] > 0 and got["right"] == 0 and got["errors"] == 0
    assert counts.wrong_examples and "I do not remember." in counts.wrong_examples[0]


def test_a_model_asking_for_tools_gets_at_most_three_then_must_answer() -> None:
    with StubAPI(*forever(always_tools)) as stub:
        counts, answerer, _ = asked(stub, most=1)
    assert counts.total("asked") == 1
    assert counts.total("tool_calls") == MAX_TOOL_CALLS
    assert answerer.requests == MAX_TOOL_CALLS + 1
    assert "tools" not in stub.bodies[-1]  # the last request offers none
    results = loop_results(stub.bodies[-1])
    assert len(results) == MAX_TOOL_CALLS and all(
        r["content"].startswith("Error:") for r in results
    )


def test_a_peer_without_a_log_is_offered_read_file_only() -> None:
    with StubAPI(*forever(from_view)) as stub:
        counts, _, row = asked(stub, strategy="masking")
    assert not row.recalls and counts.total("asked") > 0
    assert {t["function"]["name"] for t in stub.bodies[0]["tools"]} == {"read_file"}


def test_probes_asked_are_capped_per_strategy_and_workload() -> None:
    with StubAPI(*forever(from_view)) as stub:
        counts, _, row = asked(stub, most=2)
    judged = sum(sum(c.values()) for c in row.probes["by_kind"].values())
    assert judged > 2 and counts.total("asked") == 2


def test_server_errors_are_counted_per_probe_never_raised() -> None:
    script = [
        s.openai_server_error(),
        s.openai_invalid_request("model refuses this"),
        s.Drop(),
        *forever(from_view),
    ]
    with StubAPI(*script) as stub:
        counts, answerer, _ = asked(stub)
    assert counts.total("asked") >= 3 and counts.total("errors") == 3
    assert counts.errors_by == {"http 500": 1, "http 400": 1, "down": 1}
    assert answerer.gave_up is None


def test_a_request_over_its_time_is_a_timeout() -> None:
    def slow(body: Body) -> Reply:
        time.sleep(1.5)
        return Reply(text="late")

    with StubAPI(slow, *forever(from_view)) as stub:
        counts, _, _ = asked(stub, most=2, timeout=0.5)
    assert counts.errors_by == {"timeout": 1} and counts.total("asked") == 2


def test_a_server_that_stops_answering_is_given_up_after_three_failures() -> None:
    with StubAPI(*forever(from_view)) as stub:
        url = stub.openai_url
    answerer = Answerer(AnswererConfig(url, "stub-model", 10))
    row, _ = run_one("default", session(), 4_000, 0, Pricing(), True, answerer)
    counts = AnswerCounts.from_dict(row.answers or {})
    assert counts.errors_by == {"down": 3} and counts.total("asked") == 3
    assert answerer.gave_up is not None and answerer.requests == 3


def test_a_view_over_the_servers_window_is_cut_and_the_prompt_kept_under_it() -> None:
    with StubAPI(*forever(from_view), routes=s.llamacpp_props(1_024)) as stub:
        counts, answerer, _ = asked(stub, budget=4_000)
    assert answerer.window == 1_024
    assert counts.cut > 0
    counter = TokenCounter()
    for body in stub.bodies:
        assert counter.text(json.dumps(body)) < 1_024
    # The model-free verdict says "view" for the whole view; the cut prompt may not hold it.
    assert counts.total("in_prompt") < counts.total("asked")


def test_an_overflow_refusal_is_retried_with_a_smaller_prompt() -> None:
    refusal = s.llamacpp_exceed_context(n_prompt_tokens=1_500, n_ctx=1_000)
    with StubAPI(refusal, *forever(from_view)) as stub:
        counts, answerer, _ = asked(stub, most=1)
    assert counts.total("errors") == 0 and answerer.requests == 2
    assert answerer.window is None  # the window the refusal stated is this probe's
    first, second = (len(json.dumps(b["messages"])) for b in stub.bodies[:2])
    assert second < first * 0.7


def test_the_cut_view_keeps_tool_calls_paired_and_the_question_last() -> None:
    view = [
        {"role": "user", "content": "Fix it."},
        said("Reading.", use("r1", "read_file", path="a.py")),
        gave("r1", "x" * 4_000),
        said("Now b.", use("r2", "read_file", path="b.py")),
        gave("r2", "short"),
    ]
    shown, cut = fit(view, 200, TokenCounter())
    assert cut and shown == view[3:]
    assert paired([view[2], *view[3:]]) == view[3:]  # an orphan result is dropped
    asked_view = with_question(shown, "what?")
    assert asked_view[-1]["content"][-1] == {"type": "text", "text": "what?"}
    assert view[4]["content"][0]["content"] == "short" and len(view[4]["content"]) == 1


@st.composite
def views(draw: st.DrawFn) -> list[Message]:
    """A request, then steps of a tool call and its result (sizes drawn), a user word between."""
    out: list[Message] = [{"role": "user", "content": "Fix it."}]
    for i in range(draw(st.integers(0, 8))):
        out.append(said(f"Step {i}.", use(f"t{i}", "bash", command=f"run {i}")))
        out.append(gave(f"t{i}", "x" * draw(st.integers(0, 3_000))))
        if draw(st.booleans()):
            out.append({"role": "user", "content": f"note {i}"})
    return out


def ids(messages: list[Message], kind: str, key: str) -> set[str]:
    return {
        b[key]
        for m in messages
        for b in m["content"]
        if isinstance(m["content"], list) and b["type"] == kind
    }


@given(views(), st.integers(0, 3_000))
def test_a_cut_view_fits_its_room_pairs_every_call_and_is_a_copy(
    view: list[Message], room: int
) -> None:
    before = json.dumps(view)
    counter = TokenCounter()
    shown, cut = fit(view, room, counter)
    assert sum(map(counter.message, shown)) <= room
    assert ids(shown, "tool_use", "id") == ids(shown, "tool_result", "tool_use_id")
    assert cut == (shown != view)
    asked_view = with_question(shown, "what?")
    assert asked_view[-1]["role"] == "user" and "what?" in json.dumps(asked_view[-1])
    joined = bool(shown) and shown[-1]["role"] == "user"
    assert len(asked_view) == len(shown) + (not joined)  # no two user messages in a row
    for message in shown:
        if isinstance(message["content"], list):
            message["content"].clear()
    assert json.dumps(view) == before  # the view is copied, never changed


def test_the_bench_table_and_json_show_model_answers_beside_the_verdicts(tmp_path: Path) -> None:
    from rich.console import Console

    from context_compact_bench import BenchConfig, run_bench

    with StubAPI(*forever(recalling)) as stub:
        config = BenchConfig(
            strategies=("default", "masking"),
            synthetic=((60, 0),),
            real=False,
            scaling_sizes=(),
            probes=True,
            answerer=AnswererConfig(stub.openai_url, "stub-model", 3),
        )
        report = run_bench(config)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["answerer"]["model"] == "stub-model"
    for row in data["results"]:
        counts = AnswerCounts.from_dict(row["answers"])
        assert counts.total("asked") == 3
        assert sum(counts.total(o) for o in OUTCOMES) == 3
        assert set(counts.by_kind) == set(KINDS)
    console = Console(record=True, width=120)
    render_answers(data["results"], data["answerer"], console)
    shown = console.export_text()
    assert "Probes answered by a model (stub-model" in shown
    assert re.search(r"default\s+all\s+\d/3", shown) and re.search(r"masking\s+all\s+\d/3", shown)


def test_the_command_says_in_one_line_when_the_answerer_does_not_answer() -> None:
    from context_compact_bench.command import bench

    url = s.closed_port_url()
    result = CliRunner().invoke(bench, ["--probes", "--answerer", url, "--no-progress"])
    assert result.exit_code != 0
    assert f"--answerer: no answer from {url}/v1" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_the_answerer_needs_the_probes() -> None:
    from context_compact_bench.command import bench

    result = CliRunner().invoke(bench, ["--answerer", "http://127.0.0.1:9/v1"])
    assert result.exit_code != 0 and "--probes" in result.output


def test_the_command_runs_the_answerer_and_writes_its_counts(tmp_path: Path) -> None:
    from context_compact_bench.command import bench

    out = tmp_path / "report.json"
    models = {"GET /v1/models": {"object": "list", "data": [{"id": "listed-model"}]}}
    with StubAPI(*forever(from_view), routes=models) as stub:
        args = [
            "--probes",
            "--answerer",
            stub.url,
            "--answerer-max",
            "2",
            "--strategies",
            "default",
            "--no-real",
            "--turns",
            "60",
            "--seeds",
            "0",
            "--scaling",
            "0",
            "--no-progress",
            "--json",
            str(out),
        ]
        result = CliRunner().invoke(bench, args)
        sent, root = stub.bodies, stub.url
    assert result.exit_code == 0, result.output
    assert "Probes answered by a model (listed-model" in result.output
    data = json.loads(out.read_text())
    assert data["answerer"]["url"] == api_url(root) == f"{root}/v1"
    assert AnswerCounts.from_dict(data["results"][0]["answers"]).total("asked") == 2
    assert sent and all(b["model"] == "listed-model" for b in sent)


@pytest.mark.parametrize("url", ["http://h:8080", "http://h:8080/", "http://h:8080/v1"])
def test_a_bare_server_address_gets_the_api_path(url: str) -> None:
    assert api_url(url) == "http://h:8080/v1"
