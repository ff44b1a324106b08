"""Checkpoints: a session resumed from any of them sends what the live one sends next.

A compacting loop is resumed (a fresh store object, a fresh Compactor) after every call; the
resumed view must be the live view byte for byte, and a store that reads from a position must
have started from a checkpoint, not from the first record. A checkpoint that cannot be
trusted is passed over for the one before or a full replay, and the resume says so.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from context_compact import Compactor, Policy
from context_compact.errors import CorruptJournal
from context_compact.session import checkpoint
from context_compact.store import FileStore, MemoryStore, SqliteStore, Store
from context_compact.store.base import Checkpointed
from context_compact.store.files import journal as file_journal
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session

TURNS = 36


def loop(store: Store, after: Callable[[int, list[Any]], None] | None = None) -> list[Any]:
    w = synthetic_session(TURNS, seed=5)
    c = Compactor(Policy.default(context_limit=5000), store, BenchSummarizer(), session="s")
    view = c.prepare([{"role": "user", "content": w.request}], w.request)
    for i, t in enumerate(w.turns):
        view.extend([t.assistant, t.results])
        view = c.prepare(view, w.request)
        c.observe(len(json.dumps(view)) // 4 + 400)
        if after is not None:
            after(i, view)
    return view


def resumed(store: Store) -> Compactor:
    return Compactor(Policy.default(context_limit=5000), store, BenchSummarizer(), session="s")


def test_a_session_resumed_after_every_call_sends_the_live_view_byte_for_byte(
    kind: str, opened: Callable[[str], Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint, "EVERY", 8)
    live = opened(kind)
    started = []

    def compare(i: int, view: list[Any]) -> None:
        store = live if kind == "memory" else opened(kind)
        again = resumed(store)
        assert json.dumps(again.view()) == json.dumps(view), f"after call {i}"
        started.append(again.engine.session.journal.checkpointed)  # type: ignore[attr-defined]
        assert again.engine.session.journal.fallback is None  # type: ignore[attr-defined]

    loop(live, compare)
    assert isinstance(live, Checkpointed)
    assert len(live.checkpoints("s")) > 10
    # Each resume started from the newest checkpoint there was, not from the first record.
    assert started[-1] == live.checkpoints("s")[-1] > 0
    assert len(set(started)) > 10


def test_the_turn_after_a_resume_is_the_turn_a_full_replay_would_prepare(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(checkpoint, "EVERY", 8)
    store = MemoryStore("/m")
    loop(store)
    w = synthetic_session(TURNS + 1, seed=5)
    step = [w.turns[-1].assistant, w.turns[-1].results]
    views = []
    for hide in (False, True):
        copy = MemoryStore("/m")
        copy.__dict__.update(json.loads(json.dumps(_state(store))))
        if hide:
            copy._marks["s"] = []  # no checkpoint found: a full replay
        again = resumed(copy)
        views.append(json.dumps(again.prepare([*again.view(), *step], w.request)))
    assert views[0] == views[1]


def _state(store: MemoryStore) -> dict[str, Any]:
    return {
        "files": store.files,
        "_sessions": store._sessions,
        "_journals": store._journals,
        "_starts": store._starts,
        "_marks": store._marks,
    }


def test_a_damaged_checkpoint_is_passed_over_and_the_resume_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(checkpoint, "EVERY", 8)
    store = MemoryStore("/m")
    view = loop(store)
    newest = store.checkpoints("s")[-1]
    # The newest checkpoint's state altered (its digest no longer matches).
    batches = store._journals["s"]
    index = max(i for i, b in enumerate(batches) if '"kind":"checkpoint"' in b)
    text = batches[index]
    at = text.index('"first_kept":', text.index('"kind":"checkpoint"'))
    batches[index] = text[:at] + '"extra":1,' + text[at:]
    again = resumed(store)
    assert json.dumps(again.view()) == json.dumps(view)
    journal = again.engine.session.journal  # type: ignore[attr-defined]
    assert 0 < journal.checkpointed < newest
    assert f"the checkpoint at record {newest} was not used" in journal.fallback
    # Said in the journal too, with the next call's records.
    assert [getattr(r, "stage", None) for r in journal.carried] == ["checkpoint_skipped"]


def test_a_journal_cut_after_its_newest_checkpoint_is_refused_not_resumed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint, "EVERY", 8)
    store = SqliteStore(tmp_path / "s.db")
    view = loop(store)
    last = store.checkpoints("s")[-1]
    # One more call without a checkpoint: the journal's last row (a batch) starts after the
    # newest checkpoint whatever batch that checkpoint ended.
    monkeypatch.setattr(checkpoint, "EVERY", 10**9)
    more = resumed(store)
    more.prepare([*view, {"role": "user", "content": "one more thing"}], "one more thing")
    store.close()
    db = sqlite3.connect(tmp_path / "s.db")
    with db:
        (pos,) = db.execute("SELECT max(pos) FROM journal WHERE session = 's'").fetchone()
        assert pos > last
        db.execute("DELETE FROM journal WHERE session = 's' AND pos = ?", (pos,))
        db.execute("UPDATE sessions SET length = ? WHERE id = 's'", (pos,))
    db.close()
    store = SqliteStore(tmp_path / "s.db")
    with pytest.raises(CorruptJournal, match="cut or rolled back"):
        resumed(store)
    store.close()


def test_a_reader_from_a_position_checks_the_chain_up_to_the_witness(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint, "EVERY", 8)
    store = SqliteStore(tmp_path / "s.db")
    loop(store)
    last = store.checkpoints("s")[-1]
    whole = list(store.records("s"))
    assert list(store.records_from("s", last)) == whole[last:]
    store.close()
    db = sqlite3.connect(tmp_path / "s.db")
    with db:
        # The link stored before the checkpoint altered: what follows no longer reaches the
        # witness's link from it.
        pos, links = db.execute(
            "SELECT pos, links FROM journal WHERE session = 's' AND pos <= ? "
            "ORDER BY pos DESC LIMIT 1",
            (last - 1,),
        ).fetchone()
        at = (last - 1 - pos) * 32
        flipped = "0" if links[at] != "0" else "1"
        links = links[:at] + flipped + links[at + 1 :]
        db.execute("UPDATE journal SET links = ? WHERE session = 's' AND pos = ?", (links, pos))
    db.close()
    store = SqliteStore(tmp_path / "s.db")
    with pytest.raises(CorruptJournal):
        list(store.records_from("s", last))
    store.close()


def _fields(value: Any, depth: int = 0) -> Any:
    """``value`` as plain data, an object by its attributes (the counter excepted)."""
    if depth > 4 or isinstance(value, str | int | float | bool | type(None)):
        return value
    if isinstance(value, dict):
        return {repr(k): _fields(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_fields(v, depth + 1) for v in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    if hasattr(value, "__dict__"):
        return {
            k: _fields(v, depth + 1)
            for k, v in vars(value).items()
            if k not in ("counter", "calibration")
        }
    return repr(value)


def test_a_checkpoint_restores_every_field_of_the_state_it_captured() -> None:
    # Every attribute of the live state, however it was added, must come back: a field a
    # checkpoint forgets makes a resumed session decide differently from the live one.
    store = MemoryStore()
    loop(store)
    compactor = resumed(store)
    compactor.prepare(compactor.view(), "task")
    engine: Any = compactor.engine
    live = engine.session.state
    raw = checkpoint.capture(live, 999, 0)
    restored, _ = checkpoint.restore(json.loads(json.dumps(raw)), live.counter, 999)
    assert set(vars(restored)) == set(vars(live))
    for name in vars(live):
        if name in ("counter",):
            continue
        assert _fields(getattr(restored, name)) == _fields(getattr(live, name)), name


# -- FileStore: checkpoints found through its marks file, read from their line ---------------


def _lines(root: Path) -> tuple[Path, list[bytes]]:
    path = root / ".transcripts" / "sessions" / "s.jsonl"
    return path, path.read_bytes().split(b"\n")[:-1]


def _rewrite(root: Path, batches: list[bytes]) -> None:
    """The journal written again from the JSON of its ``batches`` with a chain and witness
    that match it (what a writer with a bug would leave: nothing but the checkpoint's own
    digest can tell)."""
    from context_compact.store import witness

    path, _ = _lines(root)
    head, out = witness.ROOT, b""
    for data in batches:
        head = witness.link(head, data)
        out += b'{"batch":' + data + b',"link":"' + head.encode("ascii") + b'"}\n'
    path.write_bytes(out)
    witness.write(path.with_suffix(".head"), len(batches), head)


def test_a_filestore_resume_reads_from_the_newest_checkpoints_line_not_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint, "EVERY", 8)
    view = loop(FileStore(tmp_path))
    store = FileStore(tmp_path)
    newest = store.checkpoints("s")[-1]
    whole = list(FileStore(tmp_path).records("s"))
    assert list(store.records_from("s", newest)) == whole[newest:]
    read: list[int] = []
    real = file_journal.read
    monkeypatch.setattr(file_journal, "read", lambda p, o=0: read.append(o) or real(p, o))
    again = resumed(FileStore(tmp_path))
    assert json.dumps(again.view()) == json.dumps(view)
    assert again.engine.session.journal.checkpointed == newest  # type: ignore[attr-defined]
    w = synthetic_session(TURNS + 1, seed=5)
    again.prepare([*again.view(), w.turns[-1].assistant, w.turns[-1].results], w.request)
    # Neither the resume nor the append after it read the journal from its first byte.
    assert read and min(read) > 0


def test_a_filestore_checkpoint_whose_state_was_altered_is_passed_over_and_doctor_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from context_compact.cli.doctor import check_session

    monkeypatch.setattr(checkpoint, "EVERY", 8)
    view = loop(FileStore(tmp_path))
    newest = FileStore(tmp_path).checkpoints("s")[-1]
    _, lines = _lines(tmp_path)
    batches = [file_journal.batch_of(line)[2] for line in lines]
    index = max(i for i, b in enumerate(batches) if b'"kind":"checkpoint"' in b)
    # Its state no longer what its digest says.
    batches[index] = re.sub(rb'"first_kept":(\d+)', rb'"first_kept":1\1', batches[index])
    _rewrite(tmp_path, batches)
    again = resumed(FileStore(tmp_path))
    assert json.dumps(again.view()) == json.dumps(view)
    journal = again.engine.session.journal  # type: ignore[attr-defined]
    assert 0 < journal.checkpointed < newest, journal.fallback
    assert f"the checkpoint at record {newest} was not used" in journal.fallback
    row = check_session(FileStore(tmp_path), "s")
    assert row["ok"] and f"the checkpoint at record {newest} was not used" in row["checkpoint"]
    started = f"the resume started from the one at record {journal.checkpointed}"
    assert row["checkpoint"].endswith(started)


@pytest.mark.parametrize(
    "damage", ["lost", "garbage", "wrong offset", "wrong link", "wrong absurd offset"]
)
def test_a_filestore_marks_file_lost_or_wrong_costs_a_longer_replay_said_never_another_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    monkeypatch.setattr(checkpoint, "EVERY", 8)
    view = loop(FileStore(tmp_path))
    marks = tmp_path / ".transcripts" / "sessions" / "s.marks"
    rows = marks.read_bytes().split(b"\n")[:-1]
    if damage == "lost":
        marks.unlink()
    elif damage == "garbage":
        marks.write_bytes(b"\x00" * 40 + b"\n12 x\n" + rows[-1][:7])
    else:
        at, offset, lines, records, link = rows[-1].split(b" ")
        if damage == "wrong offset":
            offset = str(int(offset) + 5).encode()
        elif damage == "wrong absurd offset":  # past any journal: seeking there fails
            offset = str(2 * 10**13).encode()
        else:
            link = (b"0" if link[:1] != b"0" else b"1") + link[1:]
        rows[-1] = b" ".join([at, offset, lines, records, link])
        marks.write_bytes(b"\n".join(rows) + b"\n")
    again = resumed(FileStore(tmp_path))
    assert json.dumps(again.view()) == json.dumps(view)
    journal = again.engine.session.journal  # type: ignore[attr-defined]
    newest = max(
        i for i, r in enumerate(FileStore(tmp_path).records("s")) if r["kind"] == "checkpoint"
    )
    if damage.startswith("wrong"):
        assert journal.fallback and "was not used" in journal.fallback
        assert journal.checkpointed > 0
        assert (
            f"the resume started from the one at record {journal.checkpointed}" in journal.fallback
        )
    else:
        assert journal.checkpointed == 0
        said = f"the checkpoint at record {newest} has no usable mark"
        assert journal.fallback == f"{said}; the resume replayed every record"
    # The next call appends after what the resume checked, and a resume after it agrees.
    w = synthetic_session(TURNS + 1, seed=5)
    nxt = again.prepare([*again.view(), w.turns[-1].assistant, w.turns[-1].results], w.request)
    assert json.dumps(resumed(FileStore(tmp_path)).view()) == json.dumps(nxt)


def test_a_filestore_mark_past_the_journals_end_is_named_by_doctor_which_passes_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from context_compact.cli import main

    monkeypatch.setattr(checkpoint, "EVERY", 8)
    loop(FileStore(tmp_path))
    marks = tmp_path / ".transcripts" / "sessions" / "s.marks"
    rows = marks.read_bytes().split(b"\n")[:-1]
    at, _, lines, records, link = rows[-1].split(b" ")
    rows[-1] = b" ".join([at, str(2 * 10**13).encode(), lines, records, link])
    marks.write_bytes(b"\n".join(rows) + b"\n")
    result = CliRunner().invoke(main, ["doctor", "--store", f"file://{tmp_path}"])
    assert result.exit_code == 0, result.output
    assert "1 of 1 sessions ok" in result.output
    assert f"the checkpoint at record {int(at)} was not used" in result.output
    assert "past the journal's end" in result.output


def test_a_filestore_journal_cut_after_its_newest_checkpoint_is_refused_not_resumed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint, "EVERY", 8)
    view = loop(FileStore(tmp_path))
    monkeypatch.setattr(checkpoint, "EVERY", 10**9)
    more = resumed(FileStore(tmp_path))
    more.prepare([*view, {"role": "user", "content": "one more thing"}], "one more thing")
    path, lines = _lines(tmp_path)
    assert b'"kind":"checkpoint"' not in lines[-1]
    path.write_bytes(b"\n".join(lines[:-1]) + b"\n")
    with pytest.raises(CorruptJournal, match="cut or rolled back"):
        resumed(FileStore(tmp_path))


def test_a_filestore_reader_from_a_checkpoint_checks_the_chain_up_to_the_witness(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint, "EVERY", 8)
    loop(FileStore(tmp_path))
    path, lines = _lines(tmp_path)
    # A line after the newest checkpoint altered, its stored link kept: the chain breaks.
    store = FileStore(tmp_path)
    newest = store.checkpoints("s")[-1]
    lines[-1] = lines[-1].replace(b'"role":"assistant"', b'"role":"assistant" ', 1)
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(CorruptJournal):
        list(store.records_from("s", newest))
