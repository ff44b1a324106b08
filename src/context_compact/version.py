"""The package's version, from one place: ``pyproject.toml``'s ``[project] version``.

An installed package (a wheel, an sdist, an editable install) reads it from its own metadata;
a source tree put on the path without installing (``PYTHONPATH=src``) reads the
``pyproject.toml`` beside ``src``. Nothing else spells the number.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed_version
from pathlib import Path

DISTRIBUTION = "context-compact"


def package_version() -> str:
    """This package's version: installed metadata, else the source tree's pyproject.toml,
    else ``0+unknown``."""
    try:
        return installed_version(DISTRIBUTION)
    except PackageNotFoundError:
        pass
    import tomllib

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        if project.get("name") == DISTRIBUTION:
            return str(project["version"])
    except (OSError, KeyError, ValueError):
        pass
    return "0+unknown"


__all__ = ["DISTRIBUTION", "package_version"]
