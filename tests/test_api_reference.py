"""Every public name is in the API reference (``docs/api.md``, built by mkdocstrings) with its
signature: the names of ``context_compact.__all__``, of the documented subpackages
(``integrations``, ``testing``, ``tools``), and every name the README and the docs tell a
user to import from one of our modules."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from context_compact.errors import MissingExtra

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs/api.md"
DIRECTIVE = re.compile(r"^::: (\S+)((?:\n    .*)*)", re.MULTILINE)
IMPORTED = re.compile(r"from (context_compact[\w.]*) import ([\w, ]+)")
SUBPACKAGES = ("context_compact.integrations", "context_compact.testing", "context_compact.tools")


def resolve(path: str) -> Any:
    """The object a dotted path names (a module, or an attribute of one)."""
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError:
        module, _, name = path.rpartition(".")
        return getattr(resolve(module), name)


def optional(path: str) -> Any:
    """``resolve(path)``, or None for a name of an adapter whose framework (an optional
    extra) is not installed here: its entry is checked where it is."""
    try:
        return resolve(path)
    except MissingExtra:
        return None


def public_names() -> dict[str, Any]:
    """Dotted path -> object, for every name a user is told about."""
    found: dict[str, Any] = {}
    for module in ("context_compact", *SUBPACKAGES):
        for name in importlib.import_module(module).__all__:
            found[f"{module}.{name}"] = resolve(f"{module}.{name}")
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for module, names in IMPORTED.findall(page.read_text(encoding="utf-8")):
            for name in (n.strip() for n in names.split(",")):
                if name and f"{module}.{name}" not in found:
                    obj = optional(f"{module}.{name}")
                    if obj is not None:
                        found[f"{module}.{name}"] = obj
    return found


def documented() -> list[tuple[str, str]]:
    return DIRECTIVE.findall(API.read_text(encoding="utf-8"))


def covered_by(target: str, options: str, path: str, obj: Any) -> bool:
    shown = optional(target)
    if shown is obj:
        return True
    # A module's directive shows its members unless told not to (the errors' tree).
    return (
        hasattr(shown, "__all__")
        and "members: false" not in options
        and getattr(obj, "__module__", None) == shown.__name__
        and path.rpartition(".")[2] in shown.__all__
    )


def test_every_public_name_has_an_entry_in_the_api_reference() -> None:
    entries = documented()
    missing = [
        path
        for path, obj in public_names().items()
        if not any(covered_by(target, options, path, obj) for target, options in entries)
    ]
    assert not missing, f"not in docs/api.md: {missing}"


def test_classes_are_shown_with_their_constructors_signature() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for option in ("merge_init_into_class: true", "show_signature: true", "separate_signature"):
        assert option in config


@pytest.mark.slow
def test_the_built_reference_has_an_entry_for_every_directive(tmp_path: Path) -> None:
    pytest.importorskip("mkdocstrings")
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path)]
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True, timeout=300)
    page = (tmp_path / "api/index.html").read_text(encoding="utf-8")
    for target, _ in documented():
        assert f'id="{target}"' in page, target
    assert 'id="context_compact.Compactor.reactive_compact"' in page
