"""Probes: derived from what leaves the view, answered in view, by one recall, or lost."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_compact import Compactor, MemoryStore, Policy
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.replay import replay
from context_compact.testing.script import Script
from context_compact_bench.probes import KINDS, Ledger, judge, probes_of, renderings, view_text
from context_compact_bench.probing import ProbeTracker, recall_of
from context_compact_bench.strategies import Setup, build

Message = dict[str, Any]


def use(tool_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": args}


def said(text: str, *uses: dict[str, Any]) -> Message:
    return {"role": "assistant", "content": [{"type": "text", "text": text}, *uses]}


def gave(tool_id: str, text: str, error: bool = False) -> Message:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": text}
    if error:
        block["is_error"] = True
    return {"role": "user", "content": [block]}


FAILURE = "FAILED tests/test_tax.py::test_rate - KeyError: 'rate'"
SESSION: list[Message] = [
    {"role": "user", "content": "Fix the tax rate bug. Don't change the public API."},
    said("Reading the module first.", use("t1", "Read", file_path="src/tax.py")),
    gave("t1", "RATE = {'std': 0.2}\n"),
    said("Editing it.", use("t2", "Edit", file_path="src/tax.py", old_string="a", new_string="b")),
    gave("t2", "ok"),
    said("Now the notes.", use("t3", "Write", file_path="NOTES.md", content="done")),
    gave("t3", "written"),
    said("I'll run the tests next.", use("t4", "Bash", command="pytest tests/test_tax.py")),
    gave("t4", f"collected 3 items\n{FAILURE}\n=== 1 failed, 2 passed in 0.12s ==="),
    {"role": "user", "content": "Actually, keep the old rate table as well."},
]


def test_a_fixed_session_gives_every_kind_of_probe_with_its_exact_answer() -> None:
    probes = probes_of(SESSION)
    assert {p.kind for p in probes} == set(KINDS)
    answers = {k: [p.answer for p in probes if p.kind == k] for k in KINDS}
    assert answers["error"] == [FAILURE]
    assert answers["file"] == ["src/tax.py", "NOTES.md"]
    assert answers["last_read"] == ["src/tax.py"]
    assert answers["last_result"] == ["=== 1 failed, 2 passed in 0.12s ==="]
    assert answers["next_step"] == ["I'll run the tests next."]
    assert answers["constraint"] == [
        "Don't change the public API.",
        "Actually, keep the old rate table as well.",
    ]
    error = next(p for p in probes if p.kind == "error")
    assert error.key == "pytest tests/test_tax.py" and error.key in error.question


def test_content_still_in_view_unchanged_has_not_left() -> None:
    ledger = Ledger()
    ledger.add(SESSION)
    kept = renderings(SESSION)
    assert ledger.left(kept, kept) == []
    cut = [m for m in SESSION if m is not SESSION[8]]
    assert [a.key for a in ledger.left(kept, renderings(cut))] == [("result", "t4")]


def test_a_file_read_that_shows_code_naming_an_error_is_not_an_error() -> None:
    messages = [
        {"role": "user", "content": "look"},
        said("Reading.", use("r1", "Read", file_path="a.py")),
        gave("r1", "x = 1\nraise ValueError('bad input value')\n"),
    ]
    assert [p for p in probes_of(messages) if p.kind == "error"] == []


def test_a_flagged_result_of_a_file_tool_is_an_error_keyed_by_its_path() -> None:
    messages = [
        {"role": "user", "content": "edit"},
        said("Editing.", use("e1", "Edit", file_path="src/x.py", old_string="a", new_string="b")),
        gave("e1", "<tool_use_error>File has not been read yet.</tool_use_error>", error=True),
    ]
    (error,) = [p for p in probes_of(messages) if p.kind == "error"]
    assert error.key == "src/x.py"


# -- the real default engine, and a peer that drops content -----------------------------------

BIG = "\n".join(f"2026-11-03 12:00:{i % 60:02d} INFO worker.queue: step {i} ok" for i in range(600))
ERROR = "2026-11-03 12:10:00 ERROR parser.schema: rate table missing key 'std'"


def scripted() -> Script:
    """A request, one command whose long output ends in an error, then small steps."""
    steps: list[tuple[Message, ...]] = [
        (
            said("Running the build.", use("b1", "bash", command="make build")),
            gave("b1", f"{BIG}\n{ERROR}\nbuild stopped"),
        )
    ]
    for i in range(2, 12):
        steps.append(
            (
                said(f"Checking file {i}.", use(f"b{i}", "bash", command=f"cat f{i}.txt")),
                gave(f"b{i}", f"line {i} of a short file\n" * 40),
            )
        )
    request = "Make the build pass."
    head = ({"role": "user", "content": request},)
    return Script("probe-test", head, tuple(steps), (request,) * (len(steps) + 1), ())


def judged(strategy: str, budget: int) -> ProbeTracker:
    store = MemoryStore("/memory")
    summarizer = BenchSummarizer()
    engine = build(strategy, Setup(budget, store, summarizer))
    tracker = ProbeTracker(recall_of(engine))
    replay(
        engine,
        scripted(),
        store=store,
        root="/memory",
        overhead_tokens=0,
        window=budget,
        summarizer=summarizer,
        on_call=tracker.observe,
    )
    return tracker


def test_an_error_that_left_the_view_is_found_by_one_recall_of_its_command() -> None:
    tracker = judged("default", 4_000)
    verdicts = {p.ident: (p, v) for p, v in tracker.verdicts.values()}
    error = next((p, v) for p, v in verdicts.values() if p.kind == "error")
    assert error[0].answer == ERROR and error[0].key == "make build"
    assert error[1].outcome == "recall"
    assert all(v.outcome != "lost" for _, v in verdicts.values())


def test_a_strategy_that_drops_results_and_keeps_no_log_loses_the_error() -> None:
    tracker = judged("masking", 4_000)
    assert tracker.recall is None
    error = next(v for p, v in tracker.verdicts.values() if p.kind == "error")
    assert error.outcome == "lost"


# -- the property: every probe is answerable from the history it came from --------------------

COMMANDS = st.sampled_from(
    ["pytest -x -q", 'grep -rn "rate table" src', "make build\necho done", "ls  -la src"]
)
LINES = st.sampled_from(
    [
        "collected 12 items",
        "E   KeyError: 'rate'",
        "error: could not compile `tax` due to 2 previous errors",
        "  all   good   here  ",
        "FAILED tests/test_a.py::test_b - AssertionError",
        "</output_tail>",
        "Traceback (most recent call last):",
    ]
)
SENTENCES = st.sampled_from(
    [
        "Let me check the parser next.",
        "I will rerun the failing test.",
        "Done.",
        "Don't touch the public API.",
        "Keep the tests green, always.",
        "The schema is fine.",
    ]
)


@st.composite
def sessions(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = [{"role": "user", "content": " ".join(draw(st.lists(SENTENCES)))}]
    for i in range(draw(st.integers(1, 12))):
        text = " ".join(draw(st.lists(SENTENCES, min_size=1, max_size=3)))
        kind = draw(st.sampled_from(["bash", "read", "edit", "editor", "shell", "user"]))
        tid = f"t{i}"
        if kind == "user":
            messages.append({"role": "user", "content": text})
            continue
        if kind == "bash":
            block = use(tid, "bash", command=draw(COMMANDS))
        elif kind == "read":
            block = use(tid, "read_file", path=f"src/m{i}.py")
        elif kind == "edit":
            block = use(tid, "Edit", file_path=f"src/e{i}.py", old_string="a")
        elif kind == "editor":
            block = use(tid, "str_replace_editor", command="create", path=f"n{i}.md")
        else:
            block = use(tid, "shell", command=["bash", "-lc", draw(COMMANDS)])
        messages.append(said(text, block))
        lines = draw(st.lists(LINES, min_size=1, max_size=5))
        messages.append(gave(tid, "\n".join(lines), error=draw(st.booleans())))
    return messages


@given(sessions())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_probe_is_answered_by_the_history_it_came_from(messages: list[Message]) -> None:
    probes = probes_of(messages)
    seen = view_text(messages)
    for probe in probes:
        assert judge(probe, seen, None).outcome == "view", probe
        assert probe.key is None or probe.key in probe.question
        assert probe.key is None or probe.answer != probe.key


@given(sessions())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_keyed_probe_is_found_by_one_recall_of_the_logged_history(
    messages: list[Message],
) -> None:
    c = Compactor(Policy.default(context_limit=200_000), MemoryStore())
    c.prepare(messages, "go")
    recall = recall_of(c)
    assert recall is not None
    for probe in probes_of(messages):
        if probe.key is not None:
            assert judge(probe, "", recall).outcome == "recall", probe


# -- in the bench ------------------------------------------------------------------------------


def test_bench_probes_are_summed_per_strategy_and_shown_beside_their_cost() -> None:
    from rich.console import Console

    from context_compact_bench import BenchConfig, run_bench
    from context_compact_bench.probe_report import (
        markdown_from_json,
        probe_markdown,
        render_probes,
    )

    config = BenchConfig(
        strategies=("default", "masking"),
        synthetic=((60, 0),),
        real=False,
        scaling_sizes=(),
        probes=True,
    )
    report = run_bench(config)
    rows = {r.strategy: r for r in report.aggregate("synthetic")}
    assert rows["default"].recalls and not rows["masking"].recalls
    default = rows["default"].probes
    masking = rows["masking"].probes
    assert default is not None and masking is not None
    assert sum(c["lost"] for c in default["by_kind"].values()) == 0
    assert sum(c["lost"] for c in masking["by_kind"].values()) > 0
    console = Console(record=True, width=160)
    render_probes(report, console)
    shown = console.export_text()
    assert "Probes: Synthetic sessions (1)" in shown and "masking" in shown
    table = probe_markdown(report)
    assert table.count("\n| ") == 3  # the header, then one row per strategy
    assert "| default | yes |" in table and "| masking | no |" in table
    assert markdown_from_json(json.loads(json.dumps(report.to_dict()))) == table


def test_probes_are_refused_with_the_scaling_suite_alone() -> None:
    from click.testing import CliRunner

    from context_compact_bench.command import bench

    result = CliRunner().invoke(bench, ["--scaling", "--probes"])
    assert result.exit_code != 0
    assert "--probes" in result.output
