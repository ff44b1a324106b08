"""One exception tree: the database drivers' exceptions are named only inside the backends.

Every module of ``src`` is read with ``ast``. Outside the SQLite and PostgreSQL backends
(``store/sqlite/``, with the side index ``FileStore`` searches with too, and
``store/postgres/``), no code names an exception class of ``sqlite3``, ``psycopg`` or
``psycopg_pool`` (an ``except``, an ``isinstance``, a tuple of them): each backend maps its
driver's errors once, at its methods (``store/boundary.py``), and everyone else catches ours.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import sqlite3
from pathlib import Path
from typing import Any

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


def public_methods(cls: type) -> list[str]:
    return [
        name
        for name in dir(cls)
        if not name.startswith("_") and inspect.isfunction(inspect.getattr_static(cls, name))
    ]


def calls(path: str) -> dict[str, tuple[Any, ...]]:
    """The arguments each public method of a store is called with (``path``: one it issued)."""
    message = [{"role": "user", "content": "hi"}]
    return {
        "append": ("s", [{"kind": "note"}]),
        "append_file": ("notes.md", "a line\n"),
        "check_database": (),
        "checkpoints": ("s",),
        "claim": ("s",),
        "create_session": ({"id": "t"},),
        "delete_session": ("s",),
        "issued": (path,),
        "list_sessions": (),
        "lost_meta": ("s",),
        "read_bytes": (path,),
        "read_text": (path,),
        "records": ("s",),
        "records_from": ("s", 1),
        "save_blob": ("another text",),
        "save_media": (b"\x89PNG\r\n\x1a\n", "image/png"),
        "save_messages": (message,),
        "save_pack": (["a ", "pack"],),
        "save_tool_result": ("t1", "a result"),
        "search": ("s", "needle"),
        "session_meta": ("s",),
        "token": ("s",),
        "turn": (),
        "write_transcript": (message,),
        "writer": ("s",),
        "close": (),
    }


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_every_public_method_of_a_database_store_maps_its_drivers_errors(
    backend: str, tmp_path: Path
) -> None:
    """Each method called on a store whose connection is gone: what leaves it is ours."""
    from context_compact.errors import StoreRefused

    driver: tuple[type[BaseException], ...] = (sqlite3.Error,)
    if backend == "postgres":
        import psycopg

        from context_compact.store.postgres import PostgresStore
        from postgres_server import drop_schema, require

        url = require()
        schema = "cc_test_" + hashlib.sha256(str(tmp_path).encode()).hexdigest()[:16]

        def opened() -> Any:
            return PostgresStore(url, root=tmp_path, schema=schema)

        def broken(store: Any) -> None:
            store.pg.pool.close()

        driver += (psycopg.Error,)
    else:
        from context_compact.store import SqliteStore

        def opened() -> Any:
            return SqliteStore(tmp_path / "s.db")

        def broken(store: Any) -> None:
            store.db.connection.close()

    try:
        first = opened()
        first.create_session({"id": "s"})
        first.append("s", [{"kind": "note"}])
        path = first.save_blob("a text")
        first.close()
        store = opened()  # knows nothing yet: every method asks the database
        broken(store)
        table = calls(path)
        methods = public_methods(type(store))
        assert {"append", "records", "create_session", "save_blob", "close"} <= set(methods)
        assert set(methods) <= set(table), "give the new methods their arguments in calls()"
        escaped, refused, other = [], [], []
        for name in sorted(methods, key=list(table).index):  # close last
            try:
                answer = getattr(store, name)(*table[name])
                if name in ("records", "records_from", "search"):
                    list(answer)
                elif name == "turn":
                    with answer:
                        pass
            except driver as error:
                escaped.append(f"{name}: {type(error).__module__}.{type(error).__name__}")
            except StoreRefused:
                refused.append(name)
            except Exception as error:  # ours, or the standard library's (a KeyError)
                other.append(f"{name}: {error!r}")
        assert escaped == [], other
        assert {"append", "records", "create_session", "save_blob"} <= set(refused)
    finally:
        if backend == "postgres":
            drop_schema(schema)
