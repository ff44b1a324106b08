"""Reading a command's output without a model (``session/outcomes.py``, ``session/calls.py``)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_compact.session import ledger, ledger_view
from context_compact.session.calls import read_call
from context_compact.session.ledger_rules import LedgerRules
from context_compact.session.outcomes import (
    MAX_LINE,
    MAX_NAMES,
    exit_status,
    first_error,
    test_summary,
)
from context_compact.sizing.estimate import text_tokens

SUMMARIES = [
    (
        "tests/test_a.py ..F\nFAILED tests/test_a.py::test_x - assert 0\n"
        "========= 1 failed, 2 passed, 1 skipped in 0.12s =========",
        ("pytest", 2, 1, ("tests/test_a.py::test_x",)),
    ),
    ("3 passed in 0.01s", ("pytest", 3, 0, ())),
    (
        "FAIL: test_add (calc.tests.CalcTest)\n------\nRan 4 tests in 0.002s\n\n"
        "FAILED (failures=1)",
        ("unittest", 3, 1, ("calc.tests.CalcTest.test_add",)),
    ),
    ("Ran 4 tests in 0.002s\n\nOK", ("unittest", 4, 0, ())),
    (
        "  \u25cf math \u203a adds\n\nTests:       1 failed, 9 passed, 10 total\nTime: 1s",
        ("jest", 9, 1, ("math \u203a adds",)),
    ),
    (
        " FAIL  src/a.test.ts > math > adds\n Test Files  1 failed (1)\n"
        "      Tests  1 failed | 5 passed (6)",
        ("vitest", 5, 1, ("src/a.test.ts > math > adds",)),
    ),
    (
        "=== RUN   TestA\n--- FAIL: TestA (0.00s)\n--- PASS: TestB (0.00s)\n"
        "FAIL\texample.com/m\t0.01s",
        ("go test", 1, 1, ("TestA",)),
    ),
    ("ok  \texample.com/m\t0.01s\nok  \texample.com/n\t(cached)", ("go test", 2, 0, ())),
    (
        "test tests::adds ... FAILED\n\nfailures:\n    tests::adds\n\n"
        "test result: FAILED. 4 passed; 1 failed; 0 ignored; 0 measured",
        ("cargo test", 4, 1, ("tests::adds",)),
    ),
    (
        "  1) test adds (CalcTest)\n     test/calc_test.exs:5\n\nFinished in 0.1 seconds\n"
        "3 doctests, 12 tests, 1 failure",
        ("mix test", 11, 1, ("CalcTest: adds",)),
    ),
]


@pytest.mark.parametrize(("text", "expected"), SUMMARIES)
def test_each_runners_summary_gives_its_counts_and_failing_names(
    text: str, expected: tuple[str, int, int, tuple[str, ...]]
) -> None:
    found = test_summary(text)
    assert found is not None
    assert (found.runner, found.passed, found.failed, found.failing) == expected


def test_output_of_no_known_runner_claims_nothing() -> None:
    assert test_summary("all good, 3 things done\n") is None
    assert exit_status("all good") is None and first_error("all good") is None


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("x\n[exit code 2]", 2),
        ("Exit code: 1\nWall time: 0.2 seconds", 1),
        ("<returncode>0</returncode>\n<output>\n</output>", 0),
        ('{"output": "boom", "metadata": {"exit_code": 127, "duration_seconds": 0.1}}', 127),
        ("[The command completed with exit code 1.]", 1),
    ],
)
def test_the_exit_status_each_agent_writes_is_read(text: str, status: int) -> None:
    assert exit_status(text) == status


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=3_000))
def test_the_readers_never_raise_and_stay_bounded_on_any_text(text: str) -> None:
    found = test_summary(text)
    if found is not None:
        assert len(found.failing) <= MAX_NAMES
        assert all(len(name) <= MAX_LINE and "\n" not in name for name in found.failing)
    line = first_error(text)
    assert line is None or (len(line) <= MAX_LINE and "\n" not in line)
    exit_status(text)


RUNNER_WORDS = st.sampled_from(
    [
        "FAILED ",
        "ERROR ",
        " passed",
        " failed",
        " in 0.1s",
        "Ran ",
        " tests in 1s\n\n",
        "FAILED (failures=",
        "Tests:",
        " total",
        "--- FAIL: ",
        "--- PASS: ",
        "test result: FAILED. ",
        "; ",
        " ... FAILED",
        "\n",
        "=",
        "::",
        ")",
        "(",
        "|",
        "exit code ",
        "<returncode>",
        "{",
        '"metadata"',
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(RUNNER_WORDS, st.integers(0, 10**6).map(str), st.text(max_size=8))))
def test_runner_look_alikes_never_raise_either(parts: list[str]) -> None:
    text = "".join(parts)
    found = test_summary(text)
    assert found is None or (found.passed >= 0 and found.failed >= 0)
    exit_status(text, True)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(
        ["bash", "shell", "Write", "Edit", "str_replace_editor", "apply_patch", "open"]
    ),
    st.dictionaries(
        st.sampled_from(["command", "path", "file_path", "content", "input", "view_range"]),
        st.one_of(st.text(max_size=200), st.lists(st.text(max_size=20), max_size=4), st.none()),
    ),
)
def test_reading_any_call_never_raises(name: str, inputs: dict[str, object]) -> None:
    call = read_call(name, inputs, LedgerRules(), "cur.py")
    assert call is None or all(isinstance(p, str) for p in call.paths)


TOOLS = st.sampled_from(
    ["bash", "Bash", "shell", "Write", "Edit", "read_file", "apply_patch", "open"]
)
PATHS = st.text(min_size=1, max_size=60)


@st.composite
def logs(draw: st.DrawFn) -> list[dict[str, object]]:
    log: list[dict[str, object]] = [{"role": "user", "content": "go"}]
    for i in range(draw(st.integers(0, 30))):
        name = draw(TOOLS)
        inputs = {
            "command": draw(st.one_of(st.text(max_size=80), st.just("pytest -q"))),
            "path": draw(PATHS),
            "file_path": draw(PATHS),
            "content": draw(st.text(max_size=20)),
            "input": draw(st.text(max_size=80)),
        }
        use = {"type": "tool_use", "id": f"c{i}", "name": name, "input": inputs}
        out = draw(st.one_of(st.text(max_size=200), st.sampled_from(SUMMARY_TEXTS)))
        result = {"type": "tool_result", "tool_use_id": f"c{i}", "content": out}
        if draw(st.booleans()):
            result["is_error"] = True
        log += [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    return log


SUMMARY_TEXTS = [text for text, _ in SUMMARIES]


@settings(max_examples=100, deadline=None)
@given(logs(), st.integers(0, 800))
def test_any_log_gives_a_ledger_whose_rendering_fits_and_that_a_checkpoint_keeps(
    log: list[dict[str, object]], tokens: int
) -> None:
    kept = ledger.of(log)  # type: ignore[arg-type]
    text = ledger_view.render(kept, tokens, "/m/ledger.txt")
    assert text_tokens(text) <= tokens and text == ledger_view.render(kept, tokens, "/m/ledger.txt")
    raw = json.loads(json.dumps(kept.as_json()))
    assert ledger.Ledger.from_json(raw).as_json() == kept.as_json()
    ledger_view.full(kept, detail=True)
