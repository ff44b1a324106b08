"""PostgresStore: tables, migrations, the lease with fencing tokens, files any worker reads.

The contract every store keeps runs against it too (``postgres`` in ``store_helpers.KINDS``);
here is what only a store on a server shared by a fleet has."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from store_helpers import big_text, turn, whole_turns

from context_compact.errors import CorruptStore
from context_compact.store import SessionLocked, UnknownMigration
from context_compact.store.postgres import PostgresStore
from context_compact.store.postgres import schema as schema_module
from postgres_server import query, require

psycopg = pytest.importorskip("psycopg", reason="pip install 'context-compact[postgres]'")


def test_each_kind_of_record_goes_to_its_table(worker: Callable[..., PostgresStore]) -> None:
    store = worker()
    session = store.create_session({})
    store.append(session, [*turn(0), {"kind": "observe", "tokens": 5}])
    schema = store.schema
    assert query(schema, "SELECT pos, id, parent FROM messages") == [(0, "m0", None)]
    assert query(schema, "SELECT pos FROM edits") == [(1,)]
    assert query(schema, "SELECT pos FROM events") == [(2,)]
    assert query(schema, "SELECT pos, kind FROM records") == [(3, "observe")]
    assert query(schema, "SELECT size FROM blobs") == [
        (len(big_text(0).encode("utf-8", "surrogatepass")),)
    ]


def test_opening_a_migrated_schema_again_changes_nothing(
    worker: Callable[..., PostgresStore], schema: str
) -> None:
    worker().close()
    applied = query(schema, "SELECT name, applied_at FROM schema_migrations ORDER BY name")
    assert [name for name, _ in applied] == [name for name, _ in schema_module.MIGRATIONS]
    with psycopg.connect(require(), autocommit=True) as conn:
        assert schema_module.migrate(conn, schema) == []
    worker("b")
    assert query(schema, "SELECT name, applied_at FROM schema_migrations ORDER BY name") == applied


def test_a_schema_from_a_newer_version_is_refused_by_migration_name(
    worker: Callable[..., PostgresStore], schema: str
) -> None:
    worker().close()
    query(schema, "INSERT INTO schema_migrations VALUES ('0099_from_the_future', 'x')")
    with pytest.raises(UnknownMigration, match="0099_from_the_future"):
        worker("b")


def test_a_failing_migration_leaves_nothing_of_itself(
    worker: Callable[..., PostgresStore], schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = ("0003_broken", "CREATE TABLE half (x int); CREATE TABLE (;")
    monkeypatch.setattr(schema_module, "MIGRATIONS", [*schema_module.MIGRATIONS, broken])
    with pytest.raises(CorruptStore) as raised:
        worker()
    assert isinstance(raised.value.__cause__, psycopg.errors.SyntaxError)
    assert (
        query(
            schema, "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = 'half'", schema
        )
        == []
    )
    assert ("0003_broken",) not in query(schema, "SELECT name FROM schema_migrations")
    monkeypatch.undo()
    worker("b")  # the earlier migrations were applied and kept


def test_workers_starting_at_once_on_a_new_schema_apply_each_migration_once(
    worker: Callable[..., PostgresStore], schema: str
) -> None:
    errors: list[BaseException] = []

    def start(n: int) -> None:
        try:
            worker(f"w{n}")
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=start, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    names = [name for (name,) in query(schema, "SELECT name FROM schema_migrations")]
    assert sorted(names) == [name for name, _ in schema_module.MIGRATIONS]


def test_a_writer_that_lost_its_lease_cannot_append(worker: Callable[..., PostgresStore]) -> None:
    first, second = worker("a"), worker("b")
    session = first.create_session({})
    first.append(session, turn(0))
    assert first.token(session) == 1
    # As if the first writer ran on another machine and stopped answering past its lease.
    query(first.schema, "UPDATE writers SET host = 'gone-host', heartbeat = heartbeat - 3600")
    second.records(session)
    second.append(session, turn(1))
    assert second.token(session) == 2
    with pytest.raises(SessionLocked, match=r"lost its lease \(token 1\).*on .*token 2"):
        first.append(session, turn(2))
    assert whole_turns(list(second.records(session))) == 2  # nothing of the first got in


def test_a_live_writer_on_another_machine_is_named_to_the_second(
    worker: Callable[..., PostgresStore],
) -> None:
    first, second = worker("a"), worker("b")
    session = first.create_session({})
    first.append(session, turn(0))
    query(first.schema, "UPDATE writers SET host = 'worker-7', pid = 4242")
    with pytest.raises(SessionLocked, match=r"being written by process 4242 on worker-7"):
        second.claim(session)
    assert second.writer(session) is not None


def test_a_closed_writer_releases_the_session_and_its_token_is_never_given_again(
    worker: Callable[..., PostgresStore],
) -> None:
    first = worker("a")
    session = first.create_session({})
    first.append(session, turn(0))
    first.close()
    second = worker("b")
    assert second.writer(session) is None
    second.records(session)
    second.append(session, turn(1))
    assert second.token(session) == 2


def test_readers_never_wait_for_a_writer(worker: Callable[..., PostgresStore]) -> None:
    store = worker()
    session = store.create_session({})
    store.append(session, turn(0))
    with psycopg.connect(require()) as writer:  # holds the session's row, uncommitted
        writer.execute(f"SET search_path TO {store.schema}")
        writer.execute("SELECT length FROM sessions WHERE id = %s FOR UPDATE", (session,))
        writer.execute("INSERT INTO events (session, pos, body) VALUES (%s, 3, '{}')", (session,))
        read: list[int] = []
        reader = threading.Thread(target=lambda: read.append(len(list(store.records(session)))))
        reader.start()
        reader.join(timeout=60)
        assert read == [3]  # what was committed, at once
        writer.rollback()


def test_a_file_another_worker_wrote_is_read_from_the_database(
    worker: Callable[..., PostgresStore], tmp_path: Path
) -> None:
    here, there = worker("a"), worker("b")
    path = here.save_blob(big_text(1))
    pack = here.save_pack(["part one ", big_text(2)])
    index = here.append_file("sessions/s.index.md", "line 1\n")
    assert not (tmp_path / "b" / Path(path).relative_to(tmp_path / "a")).exists()
    for issued, text in [(path, big_text(1)), (pack, "part one " + big_text(2))]:
        assert there.issued(issued)
        assert there.read_text(issued) == text
    there.append_file("sessions/s.index.md", "line 2\n")  # grows on the other worker
    assert here.read_text(index) == "line 1\nline 2\n"
    assert Path(index).read_text() == "line 1\nline 2\n"  # the local copy brought up to date
    copy = tmp_path / "b" / Path(path).relative_to(tmp_path / "a")
    assert copy.read_bytes() == big_text(1).encode("utf-8", "surrogatepass")  # now cached here


def test_a_path_under_a_root_no_worker_used_is_not_issued(
    worker: Callable[..., PostgresStore], tmp_path: Path
) -> None:
    store = worker()
    path = store.save_blob("text")
    elsewhere = path.replace(str(tmp_path / "a"), "/somewhere/else")
    assert not store.issued(elsewhere)
    with pytest.raises(KeyError):
        store.read_text(elsewhere)


def test_the_password_never_appears_in_what_the_store_shows() -> None:
    from context_compact.store.postgres import shown_url

    assert shown_url("postgresql://me:s3cret@db:5432/x") == "postgresql://me:***@db:5432/x"


def test_a_connection_the_server_dropped_is_an_os_error_and_the_next_call_works(
    worker: Callable[..., PostgresStore],
) -> None:
    from context_compact.store.postgres import ServerUnavailable

    store = worker(pool_size=1)
    session = store.create_session({})
    with store.pg.connection() as conn:  # the pool's one connection
        backend = conn.info.backend_pid
    with psycopg.connect(require(), autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
    with pytest.raises(ServerUnavailable, match="schema cc_test_"):
        store.append(session, turn(0))
    store.append(session, turn(0))
    assert whole_turns(list(store.records(session))) == 1


def test_sessions_rm_on_a_store_that_cannot_remove_is_one_line_and_keeps_them(
    schema: str, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from context_compact.cli import main

    store = PostgresStore(require(), root=tmp_path / "a", schema=schema)
    sid = store.create_session({})
    store.close()
    url = f"{require()}?schema={schema}"
    result = CliRunner().invoke(main, ["--store", url, "sessions", "rm", sid])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    (line,) = result.stderr.splitlines()
    assert "PostgresStore cannot remove sessions" in line and sid in line
    kept = PostgresStore(require(), root=tmp_path / "a", schema=schema)
    assert [m["id"] for m in kept.list_sessions()] == [sid]
    kept.close()
