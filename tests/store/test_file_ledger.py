"""FileStore's append-only files after a write cut short (a full disk): the torn entry is skipped,
the next one is whole (``file_ledger.py``), and ledgers written before the frames still read."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from context_compact.store import FileStore
from context_compact.store.files.ledger import frame, parse

LEDGER = Path(".task_outputs/issued.txt")


def tear(file: Path, keep: int) -> None:
    """The end of ``file`` as a write that stopped after ``keep`` bytes leaves it."""
    data = file.read_bytes()
    file.write_bytes(data[: len(data) - keep])


def test_a_path_issued_after_a_torn_ledger_entry_is_still_issued_after_a_restart(
    tmp_path: Path,
) -> None:
    store = FileStore(tmp_path)
    first = store.save_blob("first output")
    second = store.save_blob("second output")
    store.close()
    tear(tmp_path / LEDGER, 7)  # the second entry's write stopped half-way (disk full)
    store = FileStore(tmp_path)
    third = store.save_blob("third output")  # the next process writes on after the torn bytes
    store.close()
    fresh = FileStore(tmp_path)
    try:
        assert fresh.read_text(first) == "first output"
        assert fresh.read_text(third) == "third output"  # refused when glued to the torn entry
        assert fresh.issued(second) is False  # its entry is torn: not ours any more
    finally:
        fresh.close()


def test_a_ledger_written_before_the_frames_still_reads(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    path = store.save_blob("kept from an older version")
    store.close()
    rel = Path(path).relative_to(tmp_path).as_posix()
    (tmp_path / LEDGER).write_bytes(f"{rel}\n".encode())  # one path a line, as it was
    fresh = FileStore(tmp_path)
    try:
        assert fresh.read_text(path) == "kept from an older version"
        later = fresh.save_blob("written now")
    finally:
        fresh.close()
    again = FileStore(tmp_path)
    try:
        assert again.issued(path) and again.issued(later)
    finally:
        again.close()


def test_a_session_index_line_after_a_torn_one_starts_a_line_of_its_own(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    try:
        path = store.append_file("s.index.md", "- first line\n")
        with open(path, "ab") as index:
            index.write(b"- a line cut sh")  # a write that stopped half-way
        store.append_file("s.index.md", "- next line\n")
        assert Path(path).read_text().splitlines()[-1] == "- next line"
    finally:
        store.close()


paths = st.text(alphabet="abcxyz0189._/-", min_size=1, max_size=30)


@given(st.lists(paths, min_size=1, max_size=6), st.data())
def test_any_entry_cut_anywhere_loses_only_itself(entries: list[str], data: st.DataObject) -> None:
    torn = data.draw(st.integers(0, len(entries) - 1))
    written = b""
    for n, entry in enumerate(entries):
        framed = frame(entry)
        if n == torn:
            # A tear loses at least one byte before the closing newline: an entry cut only
            # of that newline is whole (its checksum is there) and the next write ends it.
            framed = framed[: data.draw(st.integers(0, len(framed) - 2))]
        written += framed
    found, used = parse(written + b"\n", lambda _: False)
    assert used == len(written) + 1
    assert found == entries[:torn] + entries[torn + 1 :]
