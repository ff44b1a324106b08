"""Issue 18: inputs the journal cannot hold are refused before anything is logged, and the
session stays resumable to its last good view, on both durable stores."""

from __future__ import annotations

import datetime
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from context_compact import (
    Compactor,
    FileStore,
    InvalidHistory,
    MemoryStore,
    Policy,
    SqliteStore,
    check,
)
from context_compact.cli import main
from context_compact.invariants import MAX_DEPTH
from context_compact.registry import NAMES, load_plugins, policy_at
from histories import call, results, user

load_plugins()  # every engine of the registry, those of installed packages (the bench) included


def open_store(kind: str, tmp_path: Path) -> Any:
    return FileStore(tmp_path) if kind == "files" else SqliteStore(tmp_path / "s.db")


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": value}
    return value


def history_with_input(value: Any) -> list[dict[str, Any]]:
    use = {"type": "tool_use", "id": "a", "name": "bash", "input": {"when": value}}
    return [user("t"), {"role": "assistant", "content": [use]}, results(("a", "ok"))]


BAD_INPUTS = {
    "bytes": (b"\x00\xff", "unserializable", "content[0].input.when: bytes"),
    "datetime": (datetime.datetime(2026, 1, 1), "unserializable", "input.when: datetime"),
    "set": ({1, 2}, "unserializable", "content[0].input.when: set"),
    "nested 500 deep": (nested(500), "too_deep", f"nested more than {MAX_DEPTH} levels"),
    "nested 2000 deep": (nested(2_000), "too_deep", f"nested more than {MAX_DEPTH} levels"),
    "an int key": ({1: "x"}, "unserializable", "key 1 is not a string"),
}


@pytest.mark.parametrize("kind", ["files", "sqlite"])
@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_a_value_json_cannot_hold_is_refused_naming_index_path_and_rule_and_nothing_is_logged(
    tmp_path: Path, kind: str, case: str
) -> None:
    value, rule, where = BAD_INPUTS[case]
    store = open_store(kind, tmp_path)
    c = Compactor(Policy.default(), store)
    good = [user("t"), call("a"), results(("a", "ok"))]
    c.prepare(good[:1], "t")
    with pytest.raises(InvalidHistory, match=f"message 1: {rule}: .*{re.escape(where)}"):
        c.prepare(history_with_input(value), "t")
    # A good retry goes on from where the session was, and the session resumes to it.
    view = c.prepare(good, "t")
    sid = c.session_id
    store.close()
    again = open_store(kind, tmp_path)
    resumed = Compactor(Policy.default(), again, session=sid)
    assert resumed.view() == view
    logged = [r["message"] for r in again.records(sid) if r["kind"] == "message"]
    assert logged == good
    again.close()


@pytest.mark.parametrize("policy", [Policy.default(), Policy.seed(echo=False)])
@pytest.mark.parametrize("method", ["prepare", "record", "compact_history", "reactive_compact"])
def test_every_entry_point_refuses_a_tool_input_nested_2000_deep(
    tmp_path: Path, policy: Any, method: str
) -> None:
    c = Compactor(policy, FileStore(tmp_path))
    history = history_with_input(nested(2_000))
    args: tuple[Any, ...] = (history,) if method == "record" else (history, "t")
    with pytest.raises(InvalidHistory, match="too_deep"):
        getattr(c, method)(*args)


@pytest.mark.parametrize("name", sorted(set(NAMES) - {"default", "seed"}))
def test_every_bench_engine_refuses_a_changed_tool_input_nested_20000_deep(name: str) -> None:
    # Hashing a history this deep overflows the JSON encoder's stack: a peer engine must
    # refuse it by name as the session engine does, not raise RecursionError.
    c = Compactor(policy_at(name, 12_500), MemoryStore())
    view = c.prepare(history_with_input("ok"), "t")
    # The same list with its call's input replaced: the engine hashes the caller's messages
    # to find where they part from what it returned.
    history = [view[0], *history_with_input(nested(20_000))[1:]]
    with pytest.raises(InvalidHistory, match="too_deep"):
        c.prepare(history, "t")


def test_a_non_json_object_under_an_extra_message_key_is_refused() -> None:
    history = history_with_input("ok")
    history[1] = {**history[1], "meta": object()}
    (violation, *_) = check(history)
    assert (violation.index, violation.rule) == (1, "unserializable")
    assert "meta: object is not JSON" in violation.detail


def test_nesting_up_to_the_limit_is_valid_and_resumes(tmp_path: Path) -> None:
    # The message, its content list, the block, its input and the "when" key: 4 levels.
    history = history_with_input(nested(MAX_DEPTH - 4))
    assert check(history) == []
    store = SqliteStore(tmp_path / "s.db")
    c = Compactor(Policy.default(), store)
    view = c.prepare(history, "t")
    store.close()
    again = SqliteStore(tmp_path / "s.db")
    assert Compactor(Policy.default(), again, session=c.session_id).view() == view
    again.close()


@pytest.mark.parametrize("depth", [300, 3_000])
def test_import_of_a_tool_input_nested_too_deep_is_one_line_and_leaves_no_session(
    tmp_path: Path, depth: int
) -> None:
    inner = '{"a": ' * depth + "1" + "}" * depth
    log = (
        '[{"role": "user", "content": "t"}, {"role": "assistant", "content": [{"type": '
        f'"tool_use", "id": "a", "name": "b", "input": {inner}}}]}}, {{"role": "user", '
        '"content": [{"type": "tool_result", "tool_use_id": "a", "content": "ok"}]}]'
    )
    path = tmp_path / "deep.json"
    path.write_text(log)
    result = CliRunner().invoke(main, ["import", str(path), "--workdir", str(tmp_path)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    (line,) = result.output.splitlines()
    assert "too deep" in line or "too_deep" in line
    store = SqliteStore(tmp_path / ".context-compact" / "sessions.db", root=tmp_path)
    assert store.list_sessions() == []
    store.close()


def test_import_of_a_2_gib_line_stops_at_the_configured_line_limit_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    log = tmp_path / "huge.jsonl"
    with log.open("wb") as handle:
        handle.write(b'{"type": "user", "message": {"role": "user", "content": "')
        handle.truncate(2 << 30)  # sparse: 2 GiB of one line, never on disk
    args = ["import", str(log), "--workdir", str(tmp_path), "--max-file-bytes", str(3 << 30)]
    result = CliRunner().invoke(main, [*args, "--max-line-bytes", str(1 << 20)])
    assert result.exit_code == 1
    (line,) = result.output.splitlines()
    assert "line 1 is over the limit of 1,048,576 bytes per line" in line
    assert "--max-line-bytes" in line
    store = SqliteStore(tmp_path / ".context-compact" / "sessions.db", root=tmp_path)
    assert store.list_sessions() == []
    store.close()


def test_import_of_a_file_over_the_file_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    log = tmp_path / "big.json"
    log.write_text('[{"role": "user", "content": "' + "x" * 5_000 + '"}]')
    args = ["import", str(log), "--workdir", str(tmp_path), "--max-file-bytes", "1000"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and "over the limit of 1,000 per file" in result.output
    assert CliRunner().invoke(main, args[:-2]).exit_code == 0
