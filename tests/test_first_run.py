"""The first real run from the base install (no extras): every missing extra, unusable
directory and bad store path ends in ONE line on stderr naming the fix, exit status 1, never
a traceback; the offline demo and ``--version`` work without any extra."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from base_install import make_base_install

SAMPLE = Path(__file__).parent / "data" / "aider" / "aider-repo.aider.chat.history.md"


@pytest.fixture(scope="session")
def base_python(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield make_base_install(tmp_path_factory.mktemp("base-install") / "venv")


def cli(
    python: Path, *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CC_STORE_URL")}
    clean.update(env or {})
    return subprocess.run(
        [str(python), "-m", "context_compact.cli", *args],
        cwd=cwd,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert result.returncode == 1, (result.returncode, result.stderr)
    return lines[0]


def test_the_base_install_has_none_of_the_extras(base_python: Path, tmp_path: Path) -> None:
    code = (
        "import importlib.util as u; "
        "print([m for m in ('anthropic', 'openai', 'psycopg', 'langchain') if u.find_spec(m)])"
    )
    result = subprocess.run([str(base_python), "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "[]", result.stderr


@pytest.mark.parametrize(
    ("provider", "package"), [("anthropic", "anthropic"), ("openai", "openai")]
)
def test_run_without_the_providers_sdk_is_one_line_naming_the_pip_install(
    base_python: Path, tmp_path: Path, provider: str, package: str
) -> None:
    env = {"MODEL_ID": "claude-sonnet-4-5", "ANTHROPIC_API_KEY": "x", "OPENAI_API_KEY": "x"}
    result = cli(base_python, "run", "--provider", provider, "hi", cwd=tmp_path, env=env)
    line = one_line(result)
    assert f"pip install 'context-compact[{package}]'" in line
    assert f"pip install {package}" in line


@pytest.mark.parametrize("command", [["sessions"], ["import", str(SAMPLE)]])
def test_a_postgresql_store_without_psycopg_is_one_line_naming_the_pip_install(
    base_python: Path, tmp_path: Path, command: list[str]
) -> None:
    url = "postgresql://127.0.0.1:5432/test"
    line = one_line(cli(base_python, "--store", url, *command, cwd=tmp_path))
    assert "pip install 'context-compact[postgres]'" in line


def test_import_into_a_work_directory_that_cannot_hold_the_store_is_one_line(
    base_python: Path, tmp_path: Path
) -> None:
    # A file where the store's folder would go: unwritable for root as for anyone.
    (tmp_path / ".context-compact").write_text("not a folder")
    line = one_line(
        cli(base_python, "import", "--workdir", str(tmp_path), str(SAMPLE), cwd=tmp_path)
    )
    assert ".context-compact" in line and "--workdir" in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through directory permissions")
def test_import_into_a_read_only_work_directory_is_one_line(
    base_python: Path, tmp_path: Path
) -> None:
    work = tmp_path / "read-only"
    work.mkdir(mode=0o555)
    line = one_line(cli(base_python, "import", "--workdir", str(work), str(SAMPLE), cwd=tmp_path))
    assert str(work) in line and "--workdir" in line


@pytest.mark.parametrize("command", [["sessions"], ["import", str(SAMPLE)]])
def test_a_sqlite_store_under_a_file_is_one_line_naming_the_store(
    base_python: Path, tmp_path: Path, command: list[str]
) -> None:
    (tmp_path / "passwd").write_text("a file, not a folder")
    url = f"sqlite:///{tmp_path}/passwd/s.db"
    line = one_line(cli(base_python, "--store", url, *command, cwd=tmp_path))
    assert url in line and "--store" in line


def test_the_demo_runs_from_the_base_install_offline(base_python: Path, tmp_path: Path) -> None:
    result = cli(base_python, "demo", "--workdir", str(tmp_path / "demo"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "app/tax.py fixed" in result.stdout


def test_version_prints_the_packages_version(base_python: Path, tmp_path: Path) -> None:
    import tomllib

    pyproject = Path(__file__).parents[1] / "pyproject.toml"
    version = tomllib.loads(pyproject.read_text())["project"]["version"]
    result = cli(base_python, "--version", cwd=tmp_path)
    assert result.stdout.strip() == f"context-compact, version {version}", result.stderr
