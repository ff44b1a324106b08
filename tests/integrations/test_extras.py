"""The base install stays light: nothing imports a framework until its adapter is imported,
and an adapter whose framework is missing says which extra to install."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FRAMEWORKS = (
    "langchain",
    "langchain_core",
    "pydantic_ai",
    "agents",
    "litellm",
    "smolagents",
    "llama_index",
    "google.adk",
    "google.genai",
    "crewai",
)


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_importing_the_library_and_its_integrations_package_loads_no_framework() -> None:
    code = (
        "import sys, context_compact, context_compact.integrations\n"
        f"print([m for m in {FRAMEWORKS!r} if m in sys.modules])"
    )
    assert _python(code).stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("module", "framework", "extra"),
    [
        ("langchain", "langchain", "langchain"),
        ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("litellm", "litellm", "litellm"),
        ("smolagents", "smolagents", "smolagents"),
        ("llamaindex", "llama_index", "llamaindex"),
        ("adk", "google", "adk"),
        ("adk_convert", "google", "adk"),
        ("crewai", "crewai", "crewai"),
    ],
)
def test_an_adapter_without_its_framework_names_the_extra_to_install(
    module: str, framework: str, extra: str
) -> None:
    code = (
        f"import sys; sys.modules[{framework!r}] = None\n"
        f"import context_compact.integrations.{module}"
    )
    result = _python(code)
    assert result.returncode != 0
    assert f"pip install 'context-compact[{extra}]'" in result.stderr


# The extras as a user installs them: (extra, the distribution it installs).
EXTRAS = [
    ("langchain", "langchain"),
    ("pydantic-ai", "pydantic-ai-slim"),
    ("openai-agents", "openai-agents"),
    ("litellm", "litellm"),
    ("smolagents", "smolagents"),
    ("llamaindex", "llama-index-core"),
    ("adk", "google-adk"),
    ("crewai", "crewai"),
]


def test_doctor_names_each_installed_framework_extra_and_imports_none(tmp_path: Path) -> None:
    from importlib import metadata

    code = (
        "import sys\n"
        "from context_compact import Compactor, Policy, SqliteStore\n"
        f"store = SqliteStore({str(tmp_path)!r} + '/.context-compact/sessions.db', "
        f"root={str(tmp_path)!r})\n"
        "Compactor(Policy.default(), store).prepare([{'role': 'user', 'content': 'hi'}], 'hi')\n"
        "from click.testing import CliRunner\n"
        "from context_compact.cli import main\n"
        f"result = CliRunner().invoke(main, ['doctor', '--json', '--workdir', {str(tmp_path)!r}])\n"
        "print(result.output)\n"
        f"print([m for m in {FRAMEWORKS!r} if m in sys.modules])\n"
    )
    run = _python(code)
    *report, imported = run.stdout.strip().splitlines()
    assert imported == "[]", run.stdout + run.stderr
    frameworks = json.loads("\n".join(report))["frameworks"]
    expected = {}
    for extra, package in EXTRAS:
        try:
            expected[extra] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    assert {extra: row["version"] for extra, row in frameworks.items()} == expected
    assert all(row["package"] == dict(EXTRAS)[extra] for extra, row in frameworks.items())


def test_each_framework_extra_of_the_project_installs_its_framework() -> None:
    import tomllib

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    for extra, package in EXTRAS:
        assert [d.split(">")[0] for d in extras[extra]] == [package], extra


SDKS = ("anthropic", "openai")
BLOCK_SDKS = "import sys\nfor name in ('anthropic', 'openai'):\n    sys.modules[name] = None\n"


def test_the_base_install_pulls_neither_sdk_and_each_is_an_extra() -> None:
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.split(">")[0].strip() in SDKS]
    extras = project["optional-dependencies"]
    assert [d.split(">")[0] for d in extras["anthropic"]] == ["anthropic"]
    assert [d.split(">")[0] for d in extras["openai"]] == ["openai"]
    assert sorted(d.split(">")[0] for d in extras["cli"]) == ["anthropic", "openai"]


def test_the_quick_start_demo_runs_offline_without_either_sdk(tmp_path: object) -> None:
    code = (
        BLOCK_SDKS
        + "from click.testing import CliRunner\n"
        + "from context_compact.cli import main\n"
        + f"result = CliRunner().invoke(main, ['demo', '--workdir', {str(tmp_path)!r} + '/d'])\n"
        + "print(result.exit_code, repr(result.exception))\n"
    )
    result = _python(code)
    assert result.stdout.strip().splitlines()[-1] == "0 None", result.stdout + result.stderr


@pytest.mark.parametrize(
    ("provider", "extra"),
    [("anthropic.AnthropicProvider", "anthropic"), ("openai_chat.OpenAIChatProvider", "openai")],
)
def test_a_provider_without_its_sdk_names_the_extra_to_install(provider: str, extra: str) -> None:
    module, cls = provider.split(".")
    code = BLOCK_SDKS + (
        f"from context_compact.providers.{module} import {cls}\n{cls}('a-model', api_key='k')"
    )
    result = _python(code)
    assert result.returncode != 0
    assert f"pip install 'context-compact[{extra}]'" in result.stderr
