"""Against a real llama-cpp-python server running SmolLM2-135M-Instruct at 2,048 tokens
(``conftest.py`` says how it is found or started): the window, the refusal, the tool loop
under compaction with a policy that knows nothing of the server, the summarizer, check-model
(the bench's probes answered by the model: ``tests/bench/test_bench_real_model.py``).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from context_compact import Compactor, Policy
from context_compact.agent.drill import run_drill
from context_compact.cli import main
from context_compact.errors import UnknownModelWarning
from context_compact.providers.errors import is_context_overflow, overflow_figures
from context_compact.providers.openai_chat import OpenAIChatProvider
from context_compact.store.files import FileStore
from context_compact.summary import LLMSummarizer, SummaryRequest

pytestmark = pytest.mark.real_model

MODEL = "smollm2-135m-instruct-local"  # no table knows it
WINDOW = 2048
with warnings.catch_warnings():
    # A case's premise: a model no table knows and no limit (its warning expected).
    warnings.simplefilter("ignore", UnknownModelWarning)
    UNKNOWN_NO_LIMIT = Policy.default(model=MODEL)


def provider(url: str) -> OpenAIChatProvider:
    return OpenAIChatProvider(MODEL, base_url=url, timeout=300)


def test_the_servers_window_is_found(real_url: str) -> None:
    found = provider(real_url).context_window()
    assert found is not None
    assert found.tokens == WINDOW


def test_a_prompt_over_the_window_is_refused_in_words_we_recognize(real_url: str) -> None:
    model = provider(real_url)
    with pytest.raises(Exception) as caught:
        model.client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "0 " * WINDOW}], max_tokens=1
        )
    assert is_context_overflow(caught.value)
    assert overflow_figures(caught.value).window == WINDOW


def test_the_model_summarizes_a_short_history(real_url: str) -> None:
    summarizer = LLMSummarizer(provider(real_url), max_tokens=48)
    history = [
        {"role": "user", "content": "Rename the function parse_config to load_config."},
        {"role": "assistant", "content": "Renamed it in config.py and in the two callers."},
    ]
    text = summarizer.summarize(SummaryRequest(history, budget=48)).text
    assert isinstance(text, str) and text.strip()


@pytest.mark.parametrize(
    "policy",
    [
        pytest.param(Policy.default(model=MODEL, context_limit=6_000), id="limit-6000"),
        pytest.param(UNKNOWN_NO_LIMIT, id="no-limit-unknown-model"),
    ],
)
def test_a_long_tool_loop_is_refused_at_most_once_then_never(
    real_url: str, policy: Policy, turns: int, tmp_path: Path
) -> None:
    model = provider(real_url)
    summarizer = LLMSummarizer(model, max_tokens=policy.summary_max_tokens)
    compactor = Compactor(policy, FileStore(tmp_path), summarizer)
    result = run_drill(model, compactor, tmp_path, turns=turns, reply_tokens=8)
    print(json.dumps(result.as_dict()))
    assert result.calls == turns + 1
    assert len(result.refusals) <= 1
    assert result.window is not None and result.window[0] == WINDOW
    assert max(result.prompt_tokens) < WINDOW


def test_check_model_reports_the_window_the_refusal_and_the_estimate(real_url: str) -> None:
    args = ["check-model", "--base-url", real_url, "--model", MODEL, "--turns", "2", "--json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    print(json.dumps(report))
    assert report["window"]["tokens"] == WINDOW
    assert report["refusal"]["recognized"] is True
    assert report["estimate"]["server_counts"] is True
    assert report["loop"]["refused"] == 0
