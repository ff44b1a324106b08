"""A store chosen by URL: ``store_from_url``, and the CLI's ``--store`` and ``CC_STORE_URL``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from context_compact.cli import main
from context_compact.store import FileStore, MemoryStore, SqliteStore, store_from_url
from context_compact.store.postgres import PostgresStore
from postgres_server import require


def test_sqlite_urls_name_a_relative_or_an_absolute_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    relative = store_from_url("sqlite:///db/s.db")
    absolute = store_from_url(f"sqlite:///{tmp_path}/abs.db")  # sqlite:////tmp/...
    try:
        assert isinstance(relative, SqliteStore) and relative.db_path == Path("db/s.db")
        assert isinstance(absolute, SqliteStore) and absolute.db_path == tmp_path / "abs.db"
    finally:
        relative.close()
        absolute.close()


def test_a_file_url_is_a_file_store_at_its_folder(tmp_path: Path) -> None:
    store = store_from_url(f"file://{tmp_path}/files")
    assert isinstance(store, FileStore) and store.root == str(tmp_path / "files")


def test_memory_is_a_memory_store() -> None:
    assert isinstance(store_from_url("memory:"), MemoryStore)


@pytest.mark.parametrize("url", ["", "sessions.db", "sqlite://x.db", "mysql://h/db", "file:"])
def test_what_is_not_a_store_url_is_refused_naming_the_forms(url: str) -> None:
    with pytest.raises(ValueError, match=r"not a store URL.*postgresql://"):
        store_from_url(url)


def test_a_postgresql_url_takes_its_schema_from_the_query(tmp_path: Path, schema: str) -> None:
    store = store_from_url(f"{require()}?schema={schema}", root=tmp_path)
    try:
        assert isinstance(store, PostgresStore)
        assert store.schema == schema and store.root == str(tmp_path)
        assert "schema=" not in store.url
    finally:
        store.close()


@pytest.mark.parametrize("typo", ["sslmod=disable", "connect_timeot=3", "no_such_thing=1"])
def test_a_misspelt_postgresql_url_parameter_is_named_as_a_url_typo_not_damaged_tables(
    tmp_path: Path, schema: str, typo: str
) -> None:
    from context_compact.errors import ConfigError, CorruptStore

    url = f"{require()}?schema={schema}&{typo}"
    with pytest.raises(ConfigError) as raised:
        store_from_url(url, root=tmp_path)
    said = str(raised.value)
    assert not isinstance(raised.value, CorruptStore)
    assert "not a PostgreSQL URL the driver takes" in said and typo.split("=")[0] in said
    assert "\n" not in said and "backup" not in said
    if typo.startswith("sslmod="):
        assert "did you mean 'sslmode'?" in said
    result = CliRunner().invoke(main, ["doctor", "--store", url])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "tables" not in result.output and typo.split("=")[0] in result.output


def imported(
    args: list[str], workdir: Path, env: dict[str, str] | None = None, text: str = "hi"
) -> list[str]:
    log = workdir / "log.json"
    log.write_text(json.dumps([{"role": "user", "content": text}]), encoding="utf-8")
    runner = CliRunner(env=env)
    done = runner.invoke(main, [*args, "import", str(log), "--workdir", str(workdir)])
    assert done.exit_code == 0, done.output
    listed = runner.invoke(main, [*args, "sessions", "--json", "--workdir", str(workdir)])
    assert listed.exit_code == 0, listed.output
    return [s["id"] for s in json.loads(listed.stdout)]


def test_the_cli_keeps_sessions_in_the_store_given_by_store_or_cc_store_url(
    tmp_path: Path, schema: str
) -> None:
    url = f"{require()}?schema={schema}"
    first = imported(["--store", url], tmp_path)
    # Another log: the same one again would be the same session (import is idempotent).
    both = imported([], tmp_path, env={"CC_STORE_URL": url}, text="hello")
    assert len(first) == 1 and len(both) == 2 and first[0] in both
    assert not (tmp_path / ".context-compact" / "sessions.db").exists()  # not the default
    store = PostgresStore(require(), root=tmp_path, schema=schema)
    try:
        assert [m["id"] for m in store.list_sessions()] == both
    finally:
        store.close()


def test_without_a_store_url_the_cli_keeps_sessions_in_the_work_directorys_sqlite(
    tmp_path: Path,
) -> None:
    assert len(imported([], tmp_path, env={"CC_STORE_URL": ""})) == 1
    assert (tmp_path / ".context-compact" / "sessions.db").is_file()
