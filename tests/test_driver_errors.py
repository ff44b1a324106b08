"""One exception tree: the database drivers' exceptions are named only inside the backends.

Every module of ``src`` is read with ``ast``. Outside the SQLite and PostgreSQL backends
(``store/sqlite/``, with the side index ``FileStore`` searches with too, and
``store/postgres/``), no code names an exception class of ``sqlite3``, ``psycopg`` or
``psycopg_pool`` (an ``except``, an ``isinstance``, a tuple of them): each backend maps its
driver's errors once, at its methods (``store/boundary.py``), and everyone else catches ours.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "context_compact"
DRIVERS = {"sqlite3", "psycopg", "psycopg_pool"}
BACKENDS = ("store/sqlite/", "store/postgres/")


def dotted(node: ast.expr) -> list[str]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return parts[::-1]


def is_driver_exception(parts: list[str]) -> bool:
    """``sqlite3.OperationalError``, ``psycopg.errors.DiskFull``, ``psycopg_pool.PoolTimeout``."""
    if len(parts) < 2 or parts[0] not in DRIVERS:
        return False
    return "errors" in parts[1:-1] or parts[-1].endswith(("Error", "Timeout", "Warning"))


def driver_exceptions_named(path: Path, base: Path = SRC) -> list[str]:
    """``file:line: name`` of each driver exception the module at ``path`` names."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    where = path.relative_to(base)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_driver_exception(dotted(node)):
            found.append(f"{where}:{node.lineno}: {'.'.join(dotted(node))}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if is_driver_exception([*node.module.split("."), alias.name]):
                    found.append(f"{where}:{node.lineno}: {alias.name}")
    return found


def test_no_module_outside_the_backends_names_a_database_drivers_exception() -> None:
    outside = [
        path
        for path in sorted(SRC.rglob("*.py"))
        if not str(path.relative_to(SRC)).startswith(BACKENDS)
    ]
    assert len(outside) > 100  # the walk found the package
    named = [line for path in outside for line in driver_exceptions_named(path)]
    assert named == []


def test_the_check_sees_a_drivers_exception_caught_or_imported(tmp_path: Path) -> None:
    caught = tmp_path / "caught.py"
    caught.write_text(
        "import sqlite3\nfrom psycopg.errors import DiskFull\n"
        "try:\n    pass\nexcept (sqlite3.OperationalError, OSError):\n    pass\n"
        "ok = sqlite3.connect\n"
    )
    named = driver_exceptions_named(caught, tmp_path)
    assert named == ["caught.py:2: DiskFull", "caught.py:5: sqlite3.OperationalError"]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_every_public_method_of_a_database_store_maps_its_drivers_errors(backend: str) -> None:
    if backend == "postgres":
        from context_compact.store.postgres import PostgresStore as cls
    else:
        from context_compact.store.sqlite import SqliteStore as cls  # type: ignore[assignment]
    public = [
        name
        for name in ["__init__", *dir(cls)]
        if (name == "__init__" or not name.startswith("_"))
        and inspect.isfunction(inspect.getattr_static(cls, name))
    ]
    assert {"append", "records", "create_session", "search", "__init__"} <= set(public)
    unmapped = [n for n in public if not hasattr(getattr(cls, n), "__translates__")]
    assert unmapped == []
