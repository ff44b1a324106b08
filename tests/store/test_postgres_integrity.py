"""Issue 18's integrity on PostgresStore (issue 20): a journal whose rows were altered, deleted
or cut off the tail, or a database rolled back behind a worker, is reported with where and
what before it is whole, never resumed from an earlier point; ``doctor --store`` says so."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from store_helpers import big_text, turn, whole_turns

from context_compact import Compactor, Policy
from context_compact.cli import main
from context_compact.store import CorruptJournal, CorruptStore
from context_compact.store.postgres import PostgresStore
from histories import call, results, user
from postgres_server import query, require

psycopg = pytest.importorskip("psycopg", reason="pip install 'context-compact[postgres]'")

TURNS = 12


def filled(store: PostgresStore, turns: int = TURNS) -> str:
    session = store.create_session({})
    for n in range(turns):
        store.append(session, turn(n, size=2_000))
    return session


def test_an_altered_row_is_found_at_its_position(worker: Callable[..., PostgresStore]) -> None:
    session = filled(worker("a"))
    sql = "UPDATE edits SET body = replace(body, 'clear', 'CLEAR') WHERE pos = 4"
    query(worker("a").schema, sql)
    with pytest.raises(CorruptJournal, match="record 4 was altered") as found:
        list(worker("b").records(session))
    assert (found.value.session, found.value.at, found.value.whole) == (session, 4, 4)


def test_a_row_deleted_in_the_middle_is_missing_at_its_position(
    worker: Callable[..., PostgresStore],
) -> None:
    session = filled(worker("a"))
    query(worker("a").schema, "DELETE FROM events WHERE pos = 8")
    with pytest.raises(CorruptJournal, match="record 8 is missing") as found:
        list(worker("b").records(session))
    assert found.value.whole == 8


def test_a_tail_cut_off_is_reported_and_never_appended_after(
    worker: Callable[..., PostgresStore],
) -> None:
    session = filled(worker("a"))
    schema = worker("a").schema
    for table in ("messages", "edits", "events"):
        query(schema, f"DELETE FROM {table} WHERE pos >= 20")
    other = worker("b")  # a worker without a witness of it: the session's row says
    with pytest.raises(CorruptJournal, match=f"{TURNS * 3} were written: its tail was cut"):
        list(other.records(session))
    with pytest.raises(CorruptJournal, match="tail was cut"):
        other.append(session, turn(TURNS, size=2_000))
    assert query(schema, "SELECT count(*) FROM messages")[0][0] == 7  # nothing appended


def test_a_database_rolled_back_behind_a_worker_is_found_by_its_witness(
    worker: Callable[..., PostgresStore],
) -> None:
    """What a server that lost its last commits, or a restored backup, looks like: fewer
    rows, and a session row that agrees with them. Only the worker's witness knows."""
    first = worker("a")
    session = filled(first, turns=3)
    kept = query(first.schema, "SELECT length, head FROM sessions WHERE id = %s", session)[0]
    for n in range(3, TURNS):
        first.append(session, turn(n, size=2_000))
    for table in ("messages", "edits", "events"):
        query(first.schema, f"DELETE FROM {table} WHERE pos >= 9")
    query(first.schema, "UPDATE sessions SET length = %s, head = %s", *kept)
    assert whole_turns(list(worker("b").records(session)), size=2_000) == 3  # no witness there
    with pytest.raises(CorruptJournal, match="tail was cut or rolled back") as found:
        list(worker("a").records(session))  # the same root, after a restart
    assert found.value.whole == 9


def test_rows_rewritten_with_their_links_are_found_by_the_head(
    worker: Callable[..., PostgresStore],
) -> None:
    session = filled(worker("a"))
    schema = worker("a").schema
    query(schema, "UPDATE edits SET link = NULL")
    query(schema, "UPDATE events SET link = NULL")
    query(schema, "UPDATE messages SET link = NULL, body = replace(body, '\"n\":11', '\"n\":99')")
    with pytest.raises(CorruptJournal, match="the journal was altered"):
        list(worker("b").records(session))


def test_an_altered_text_is_found_in_the_record_that_names_it(
    worker: Callable[..., PostgresStore],
) -> None:
    session = filled(worker("a"))
    text = big_text(7, 2_000).encode("utf-8", "surrogatepass")
    query(worker("a").schema, "UPDATE blobs SET body = %s WHERE body = %s", text.upper(), text)
    with pytest.raises(CorruptJournal, match="a text of record 21 is altered"):
        list(worker("b").records(session))


def test_a_journal_written_before_links_is_still_read_and_then_chained(
    worker: Callable[..., PostgresStore],
) -> None:
    store = worker("a")
    session = filled(store, turns=3)
    for table in ("messages", "edits", "events"):
        query(store.schema, f"UPDATE {table} SET link = NULL")
    query(store.schema, "UPDATE sessions SET head = NULL")
    later = worker("b")
    assert whole_turns(list(later.records(session)), size=2_000) == 3
    later.append(session, turn(3, size=2_000))
    assert whole_turns(list(worker("c").records(session)), size=2_000) == 4
    assert query(store.schema, "SELECT count(*) FROM messages WHERE link IS NULL")[0][0] == 3


def test_a_witness_behind_the_journal_is_a_lower_bound(
    worker: Callable[..., PostgresStore],
) -> None:
    """Worker a wrote three turns; b took the session over and wrote two more: a, started
    again on its root, reads all five."""
    first = worker("a")
    session = filled(first, turns=3)
    first.close()
    second = worker("b")
    second.records(session)
    for n in range(3, 5):
        second.append(session, turn(n, size=2_000))
    assert whole_turns(list(worker("a").records(session)), size=2_000) == 5


def test_a_dropped_table_is_one_corrupt_store_line(worker: Callable[..., PostgresStore]) -> None:
    store = worker("a")
    session = filled(store, turns=1)
    query(store.schema, "DROP TABLE events")
    with pytest.raises(CorruptStore, match=r"schema cc_test_\w+\): the store's tables") as found:
        list(store.records(session))
    assert "\n" not in str(found.value)


def cli(*args: str, schema: str, workdir: Path) -> Result:
    url = f"{require()}?schema={schema}"
    return CliRunner().invoke(main, ["--store", url, *args, "--workdir", str(workdir)])


def two_sessions(store: PostgresStore) -> tuple[str, str]:
    ids = []
    for tag in ("good", "bad"):
        c = Compactor(Policy.default(), store)
        history = [user(tag)]
        for n in range(3):
            history = c.prepare([*history, call(f"{tag}{n}"), results((f"{tag}{n}", "x"))], tag)
        assert c.session_id is not None
        ids.append(c.session_id)
    return ids[0], ids[1]


def test_doctor_on_a_postgresql_store_names_the_damaged_session_and_what_is_whole(
    worker: Callable[..., PostgresStore], schema: str, tmp_path: Path
) -> None:
    good, bad = two_sessions(worker("a"))
    assert cli("doctor", schema=schema, workdir=tmp_path / "b").exit_code == 0
    query(schema, "DELETE FROM messages WHERE session = %s AND pos = 2", bad)
    result = cli("doctor", "--json", schema=schema, workdir=tmp_path / "b")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["integrity_check"] == "ok"
    rows = {row["id"]: row for row in report["sessions"]}
    assert rows[good]["ok"] and not rows[bad]["ok"]
    assert (rows[bad]["unit"], rows[bad]["at"], rows[bad]["whole"]) == ("record", 2, 2)
    text = cli("doctor", schema=schema, workdir=tmp_path / "b").output
    url = f"{require()}?schema={schema}"
    after = CliRunner().invoke(main, ["doctor", "--store", url, "--workdir", str(tmp_path)])
    assert after.exit_code == 1 and after.output == text  # the option after the command
    assert "database: check: ok" in text
    assert f"{bad}: DAMAGED" in text and "recoverable: the first 2 records" in text


def test_doctor_finds_an_altered_text_of_a_file_the_views_name(
    worker: Callable[..., PostgresStore], schema: str, tmp_path: Path
) -> None:
    store = worker("a")
    store.save_blob("a saved result " * 100)
    query(schema, "UPDATE blobs SET body = 'other bytes'::bytea")
    result = cli("doctor", schema=schema, workdir=tmp_path / "b")
    assert result.exit_code == 1
    assert "database: check: blob " in result.output and "was altered" in result.output


def test_doctor_and_sessions_on_a_store_missing_a_table_say_one_line(
    worker: Callable[..., PostgresStore], schema: str, tmp_path: Path
) -> None:
    two_sessions(worker("a"))
    query(schema, "DROP TABLE edits")
    for args in (["doctor"], ["sessions"]):
        result = cli(*args, schema=schema, workdir=tmp_path / "b")
        assert result.exit_code == 1, (args, result.output)
        (line,) = result.output.splitlines()
        assert "the store's tables are not what this version wrote" in line, args
        assert "Restore the database from a backup" in line and "Traceback" not in line


def test_a_server_that_does_not_answer_is_one_line_for_every_command(tmp_path: Path) -> None:
    url = "postgresql://127.0.0.1:1/test?connect_timeout=3"
    for args in (["sessions"], ["doctor"], ["inspect", "x"]):
        result = CliRunner().invoke(main, ["--store", url, *args, "--workdir", str(tmp_path)])
        assert result.exit_code == 1, (args, result.output)
        (line,) = result.output.splitlines()
        assert line.startswith("Error: postgresql://127.0.0.1:1/test") and "refused" in line
