"""The base install stays light: nothing imports a framework until its adapter is imported,
and an adapter whose framework is missing says which extra to install."""

from __future__ import annotations

import subprocess
import sys

import pytest

FRAMEWORKS = ("langchain", "langchain_core", "pydantic_ai", "agents")


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
