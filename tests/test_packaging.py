"""The release: the wheel built from this tree holds the package whole (the inspector's page,
``py.typed``) and nothing else (no tests), says the version ``pyproject.toml`` gives, and
installs into a fresh venv without extras where ``context-compact demo`` runs offline.

The wheel is built offline with the setuptools already installed (``--no-isolation``), from
a copy of the tree so that the build's own folders never land in the checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from base_install import make_base_install

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = tmp_path_factory.mktemp("tree")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, tree / name)
    shutil.copytree(
        ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    (built,) = out.glob("*.whl")
    return built


def test_the_sdist_builds_and_leaves_the_tests_out_whole(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "CHANGELOG.md"):
        shutil.copy(ROOT / name, tree / name)
    for name in ("CONTRIBUTING.md", "RELIABILITY.md"):
        shutil.copy(ROOT / name, tree / name)
    for folder in ("src", "tests"):
        shutil.copytree(
            ROOT / folder, tree / folder, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
        )
    command = [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", "dist"]
    result = subprocess.run(command, cwd=tree, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    (built,) = (tree / "dist").glob("*.tar.gz")
    import tarfile

    with tarfile.open(built) as archive:
        names = [name.split("/", 1)[1] for name in archive.getnames() if "/" in name]
    assert not [name for name in names if name.startswith("tests")], "tests half shipped"
    for name in ("README.md", "LICENSE", "CONTRIBUTING.md", "src/context_compact/py.typed"):
        assert name in names


def test_the_wheel_holds_the_inspectors_page_and_py_typed_and_no_tests(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    static = ROOT / "src" / "context_compact" / "inspector" / "static"
    for page_file in sorted(static.iterdir()):
        assert f"context_compact/inspector/static/{page_file.name}" in names
    assert "context_compact/py.typed" in names
    assert not [name for name in names if name.startswith("tests/") or "/tests/" in name]
    package = ROOT / "src" / "context_compact"
    modules = {p.relative_to(ROOT / "src").as_posix() for p in package.rglob("*.py")}
    assert modules <= set(names), sorted(modules - set(names))[:5]


def test_the_wheel_carries_no_bench_code(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"context_compact", f"context_compact-{PROJECT['version']}.dist-info"}
    assert not [name for name in names if "bench" in name.split("/")[-2:-1]]
    assert (
        "context_compact_bench"
        not in zipfile.ZipFile(wheel)
        .read(f"context_compact-{PROJECT['version']}.dist-info/entry_points.txt")
        .decode()
    )


def test_the_wheels_metadata_carries_the_one_version_the_licence_and_the_classifiers(
    wheel: Path,
) -> None:
    archive = zipfile.ZipFile(wheel)
    info = f"context_compact-{PROJECT['version']}.dist-info"
    metadata = archive.read(f"{info}/METADATA").decode()
    assert f"\nVersion: {PROJECT['version']}\n" in metadata
    assert "\nLicense-Expression: MIT\n" in metadata
    assert "Classifier: Typing :: Typed" in metadata
    assert any(name.startswith(f"{info}/licenses/LICENSE") for name in archive.namelist())
    entry_points = archive.read(f"{info}/entry_points.txt").decode()
    assert "context-compact = context_compact.cli:main" in entry_points


def test_the_wheel_installs_without_extras_and_its_demo_runs_offline(
    wheel: Path, tmp_path: Path
) -> None:
    python = make_base_install(tmp_path / "venv", package=None)
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            "--quiet",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    command = python.parent / "context-compact"
    # The wheel's code, not this tree's: nothing on the path but the venv.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    version = subprocess.run([str(command), "--version"], capture_output=True, text=True, env=env)
    assert version.stdout.strip() == f"context-compact, version {PROJECT['version']}"
    demo = subprocess.run(
        [str(command), "demo", "--workdir", str(tmp_path / "demo")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert demo.returncode == 0, demo.stderr
    assert "app/tax.py fixed" in demo.stdout
    # The bench is not in the wheel: its command says in one line what to install.
    bench = subprocess.run(
        [str(command), "bench", "--quick"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert bench.returncode == 1
    assert bench.stderr.strip().splitlines() == [
        "Error: context-compact bench needs the bench: pip install 'context-compact[bench]' "
        "(or: pip install context-compact-bench)"
    ]
