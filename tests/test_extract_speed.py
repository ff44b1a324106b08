"""``extract``'s faster paths read exactly what the plain ones did (no timings here: the
bench's scaling suite measures them)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from context_compact.summary.extract import extractive_summary
from context_compact.summary.facts import ERRORISH, error_lines, facts

PIECES = [
    "Error",
    "ValueError: bad",
    "Exception",
    "error:",
    "error[E0308]:",
    "ERROR",
    "Traceback (most recent call last):",
    "FAILED",
    "failed",
    "fatal: not a repo",
    "panic: oops",
    "xError",
    "errors",
    "Errorx",
    "ok",
    " ",
    "\n",
    "\r\n",
    "\r",
    "\x0b",
    "\u2028",
    "\x1b[31m",
    "a_b",
    "-",
]


@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
@settings(max_examples=400, deadline=None)
def test_error_lines_are_the_lines_the_errorish_pattern_matches(text: str) -> None:
    assert error_lines(text) == [m.group(0) for m in ERRORISH.finditer(text)]


def _session(commands: list[tuple[str, str]]) -> list[dict[str, object]]:
    messages: list[dict[str, object]] = [{"role": "user", "content": "Fix the build please now."}]
    for i, (command, output) in enumerate(commands):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": f"t{i}",
                        "name": "bash",
                        "input": {"command": command},
                    }
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": output}],
            }
        )
    return messages


def test_a_command_that_failed_then_passed_is_a_fix_and_one_that_failed_last_is_not() -> None:
    messages = _session(
        [
            ("make", "ERROR: missing header\n"),
            ("make test", "FAILED test_a\n"),
            ("make", "built\n\n  \n"),
            ("make test", "FAILED test_b\n"),
        ]
    )
    text = extractive_summary(messages, limit=4_000)
    assert "ERROR: missing header (fixed: `make` passed later)" in text
    assert "`make test` -> FAILED test_b" in text
    assert "`make` -> built" in text
    found = facts(messages)
    assert [e for _, e in found.errors] == [
        "ERROR: missing header",
        "FAILED test_a",
        "FAILED test_b",
    ]


def test_an_error_line_repeated_in_later_results_is_listed_once_at_its_first_place() -> None:
    messages = _session([("pytest", "E failed here\n"), ("pytest -x", "E failed here\nok\n")])
    assert [(seq, e) for seq, e in facts(messages).errors] == [(2, "E failed here")]
    assert [c.shown for c in facts(messages).commands] == ["E failed here", "ok"]


def test_the_bench_summarizer_reads_facts_once_and_says_what_the_two_calls_say() -> None:
    from context_compact.summary.extract import summary_score
    from context_compact.testing.fakes import BenchSummarizer

    messages = _session([("make", "ERROR: no rule\n"), ("ls src/app.py", "src/app.py\n")])
    summarizer = BenchSummarizer(target_chars=10)
    text = summarizer(messages, previous=None, request="Fix the build")
    assert text == extractive_summary(messages, "Fix the build", 10)
    assert summarizer.scores == [summary_score(text, messages).overall]
