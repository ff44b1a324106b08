"""A store's driver errors leave it as ours: ``StoreRefused`` (locked, full, read-only, the
server's refusal) or ``CorruptStore`` (damaged), naming the file or server, with the driver's
own exception as ``__cause__``; never ``sqlite3.Error`` or ``psycopg.Error`` themselves. The
CLI's line for each says what to do."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from store_helpers import turn

from context_compact import Compactor, Policy
from context_compact.cli.store_errors import store_line
from context_compact.errors import (
    CorruptStore,
    ServerUnavailable,
    StoreRefused,
    StoreUnavailable,
)
from context_compact.store import SqliteStore
from context_compact.store.base import STORE_ERRORS
from histories import user
from postgres_server import require


@contextlib.contextmanager
def write_locked(db: Path) -> Iterator[None]:
    """Another connection holding the database's write lock."""
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


def impatient(store: SqliteStore) -> SqliteStore:
    """The store waiting no time for a lock (it waits seconds), so a test need not."""
    store.db.connection.execute("PRAGMA busy_timeout = 0")
    return store


def test_a_locked_sqlite_database_is_store_refused_naming_the_file_never_sqlite3s_error(
    tmp_path: Path,
) -> None:
    store = impatient(SqliteStore(tmp_path / "s.db"))
    session = store.create_session({})
    with write_locked(store.db_path), pytest.raises(StoreRefused) as refused:
        store.append(session, turn(0))
    error = refused.value
    assert not isinstance(error, sqlite3.Error)
    assert (error.reason, error.code, error.where) == ("busy", "SQLITE_BUSY", str(store.db_path))
    assert str(error) == f"{store.db_path}: database is locked"
    assert isinstance(error.__cause__, sqlite3.OperationalError)
    assert error.backend_error is error.__cause__
    store.append(session, turn(0))  # the lock released: the same call goes through
    assert len(list(store.records(session))) == len(turn(0))
    store.close()


def test_a_full_sqlite_database_is_store_refused_as_full_and_a_soft_store_error(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "s.db")
    session = store.create_session({})
    pages = store.db.connection.execute("PRAGMA page_count").fetchone()[0]
    store.db.connection.execute(
        f"PRAGMA max_page_count = {pages}"
    )  # no page more: the disk is full
    with pytest.raises(StoreRefused) as refused:
        store.append(session, incompressible(256))
    assert (refused.value.reason, refused.value.code) == ("full", "SQLITE_FULL")
    assert isinstance(refused.value, STORE_ERRORS)
    store.close()


def test_the_engine_takes_a_locked_database_as_a_refused_write_to_retry(tmp_path: Path) -> None:
    store = impatient(SqliteStore(tmp_path / "s.db"))
    compactor = Compactor(Policy.default(), store)
    history = [user("a task")]
    compactor.prepare(history, "a task")
    history = [*history, {"role": "assistant", "content": "on it"}, user("go on")]
    with write_locked(store.db_path), pytest.raises(StoreUnavailable) as raised:
        compactor.prepare(history, "a task")
    assert isinstance(raised.value.__cause__, StoreRefused)
    assert "database is locked" in str(raised.value)
    assert compactor.prepare(history, "a task") == history  # retried as it was, once free
    assert len(list(store.records(compactor.session_id or ""))) > 0
    store.close()


def test_a_file_that_is_no_database_is_corrupt_store_naming_it_and_sqlites_words(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    db.write_bytes(b"not a database, " * 512)
    with pytest.raises(CorruptStore) as raised:
        SqliteStore(db)
    assert str(db) in str(raised.value) and "file is not a database" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_damaged_value_found_while_reading_is_corrupt_store_not_sqlite3s_error(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "s.db")
    session = store.create_session({"engine": "default"})
    store.close()
    with contextlib.closing(sqlite3.connect(tmp_path / "s.db")) as raw:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray((tmp_path / "s.db").read_bytes())
    data[data.index(b'"engine"') + 2] ^= 0xFF  # no longer UTF-8
    (tmp_path / "s.db").write_bytes(bytes(data))
    reader = SqliteStore(tmp_path / "s.db")
    with pytest.raises(CorruptStore) as raised:
        reader.session_meta(session)
    assert isinstance(raised.value.__cause__, sqlite3.OperationalError)
    assert str(reader.db_path) in str(raised.value) and "integrity_check" in str(raised.value)
    assert "with text" not in str(raised.value)  # SQLite's quote of the bad bytes left out
    reader.close()


def incompressible(kib: int) -> list[dict[str, object]]:
    """One record of ``kib`` KiB that no compression makes smaller."""
    return [{"kind": "message", "message": {"role": "user", "content": os.urandom(kib << 9).hex()}}]


def test_the_cli_says_a_locked_store_is_busy_and_a_full_one_needs_space(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = impatient(SqliteStore(db))
    session = store.create_session({})
    with write_locked(db), pytest.raises(StoreRefused) as locked:
        store.append(session, turn(0))
    assert store_line(db, StoreUnavailable("could not summarize")) is None  # not the store's
    wrapped = StoreUnavailable("the session journal could not be written")
    wrapped.__cause__ = locked.value
    for error in (locked.value, wrapped):
        line = store_line(db, error)
        assert line is not None and line.startswith(f"the session store {db} is busy")
        assert "Retry" in line and "integrity_check" not in line and "aside" not in line
    pages = store.db.connection.execute("PRAGMA page_count").fetchone()[0]
    store.db.connection.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(StoreRefused) as full:
        store.append(session, incompressible(256))
    line = store_line(db, full.value)
    assert line is not None and str(db) in line and "Free space" in line
    store.close()


def test_a_postgresql_server_that_takes_no_writes_is_store_refused_read_only(
    schema: str, tmp_path: Path
) -> None:
    psycopg = pytest.importorskip("psycopg")
    from context_compact.store.postgres import PostgresStore

    PostgresStore(require(), root=tmp_path, schema=schema).close()
    read_only = f"{require()}?options=-c%20default_transaction_read_only%3Don"
    with pytest.raises(StoreRefused) as refused:
        PostgresStore(read_only, root=tmp_path / "b", schema=schema)
    error = refused.value
    assert (error.reason, error.code) == ("read-only", "25006")
    assert f"schema {schema}" in str(error) and "read-only transaction" in str(error)
    assert isinstance(error.__cause__, psycopg.Error) and not isinstance(error, psycopg.Error)


def test_a_postgresql_server_that_does_not_answer_is_server_unavailable(tmp_path: Path) -> None:
    psycopg = pytest.importorskip("psycopg")
    from context_compact.store.postgres import PostgresStore

    with socket_nobody_listens_on() as port:
        url = f"postgresql://127.0.0.1:{port}/test?connect_timeout=3"
        with pytest.raises(ServerUnavailable) as raised:
            PostgresStore(url, root=tmp_path)
    assert raised.value.reason == "unreachable" and f"127.0.0.1:{port}" in str(raised.value)
    assert isinstance(raised.value.__cause__, psycopg.OperationalError)
    assert isinstance(raised.value, StoreRefused)


@contextlib.contextmanager
def socket_nobody_listens_on() -> Iterator[int]:
    """A local port that is bound (so no other test takes it) but never accepts."""
    import socket

    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield bound.getsockname()[1]
