"""Against the real-model tier's server (``tests/real_model/conftest.py`` says how it is
found or started): the bench asks the model its probes and scores the answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from context_compact.cli import main
from context_compact_bench.answer_counts import AnswerCounts
from real_model.conftest import real_url

pytestmark = pytest.mark.real_model

MODEL = "smollm2-135m-instruct-local"  # no table knows it
WINDOW = 2048
__all__ = ["real_url"]  # the fixture, used by name


def test_the_bench_asks_the_model_three_probes_and_scores_its_answers(
    real_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "answers.json"
    args = [
        "bench",
        "--probes",
        "--answerer",
        real_url,
        "--answerer-model",
        MODEL,
        "--answerer-max",
        "3",
        "--strategies",
        "default",
        "--no-real",
        "--turns",
        "30",
        "--seeds",
        "0",
        "--budget",
        "1500",
        "--scaling",
        "0",
        "--no-progress",
        "--json",
        str(out),
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    print(result.output)
    data = json.loads(out.read_text())
    assert data["answerer"]["window"] == WINDOW and data["answerer"]["gave_up"] is None
    counts = AnswerCounts.from_dict(data["results"][0]["answers"])
    print(json.dumps(counts.as_dict()))
    assert counts.total("asked") == 3
    assert counts.errors_by == {}  # every prompt fit the model's window and was answered
    assert "Probes answered by a model" in result.output
