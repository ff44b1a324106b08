"""CLI details: --version, policy settings from options and config.toml, the OpenAI budget field."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path
from typing import Any

import openai
import pytest
from click.testing import CliRunner, Result

from context_compact.cli import main
from context_compact.providers.openai_chat import OpenAIChatProvider, output_budget_param
from context_compact.store import workdir_store
from stub_api import Reply, StubAPI


def cli(args: list[str], env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, args, env=env)


def run_once(stub: StubAPI, work: Path, *options: str) -> Result:
    stub.enqueue(Reply(text="done"))
    env = {"MODEL_ID": "test-model", "ANTHROPIC_BASE_URL": stub.url}
    return cli(["run", "go", "--workdir", str(work), *options], env)


def session_policy(work: Path) -> dict[str, Any]:
    store = workdir_store(work)
    try:
        sessions = store.list_sessions()
        meta = store.session_meta(sessions[0]["id"])
        assert meta is not None
        return dict(meta["policy"])
    finally:
        store.close()


def write_config(work: Path, text: str) -> Path:
    path = work / ".context-compact" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_version_prints_the_installed_version() -> None:
    result = cli(["--version"])
    assert result.exit_code == 0
    assert result.output == f"context-compact, version {version('context-compact')}\n"


def test_thresholds_come_from_the_config_file_and_options_win(
    stub_api: StubAPI, tmp_path: Path
) -> None:
    write_config(tmp_path, "[policy]\nhigh_water = 0.7\nlow_water = 0.3\ncontext_limit = 50_000\n")
    result = run_once(stub_api, tmp_path, "--high-water", "0.9")
    assert result.exit_code == 0, result.output + result.stderr
    policy = session_policy(tmp_path)
    assert (policy["high_water"], policy["low_water"], policy["context_limit"]) == (
        0.9,
        0.3,
        50_000,
    )


def test_an_unknown_key_in_the_config_file_is_a_usage_error_naming_key_and_file(
    stub_api: StubAPI, tmp_path: Path
) -> None:
    path = write_config(tmp_path, "[policy]\nhigh_watter = 0.7\n")
    result = run_once(stub_api, tmp_path)
    assert result.exit_code == 2
    assert f"{path}: unknown key 'high_watter'" in result.stderr
    assert "Traceback" not in result.stderr and stub_api.requests == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[policy]\nhigh_water = 'high'\n", "high_water must be a number"),
        ("[policy]\nlow_water = 0.99\n", "need 0 < low_water < high_water"),
        ("[polcy]\n", "unknown key 'polcy'"),
        ("[policy\n", "not valid TOML"),
    ],
)
def test_bad_settings_are_usage_errors_that_say_what_is_wrong(
    stub_api: StubAPI, tmp_path: Path, text: str, message: str
) -> None:
    write_config(tmp_path, text)
    result = run_once(stub_api, tmp_path)
    assert result.exit_code == 2 and message in result.stderr


def test_a_threshold_option_the_seed_policy_does_not_have_is_refused(
    stub_api: StubAPI, tmp_path: Path
) -> None:
    result = run_once(stub_api, tmp_path, "--policy", "seed", "--low-water", "0.2")
    assert result.exit_code == 2
    assert "unknown key 'low_water' for the 'seed' policy" in result.stderr


@pytest.mark.parametrize(
    ("model", "field"),
    [
        ("gpt-5-mini", "max_completion_tokens"),
        ("o3", "max_completion_tokens"),
        ("o4-mini-2025-04-16", "max_completion_tokens"),
        ("openai/gpt-5.1-codex", "max_completion_tokens"),
        ("gpt-4o", "max_tokens"),
        ("qwen2.5-coder", "max_tokens"),
        ("omni-local", "max_tokens"),
    ],
)
def test_openai_reasoning_models_get_max_completion_tokens(
    stub_api: StubAPI, model: str, field: str
) -> None:
    assert output_budget_param(model) == field
    stub_api.enqueue(Reply(text="hi"))
    client = openai.OpenAI(api_key="test", base_url=stub_api.openai_url, max_retries=0)
    provider = OpenAIChatProvider(model, client=client)
    provider.complete(
        system="", messages=[{"role": "user", "content": "hi"}], tools=[], max_tokens=77
    )
    body = stub_api.last_body
    other = "max_tokens" if field == "max_completion_tokens" else "max_completion_tokens"
    assert body[field] == 77 and other not in body
