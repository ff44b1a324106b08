"""Everything we write is the owner's alone unless asked otherwise: an ``export -o`` file is
0600, and the folders a PostgreSQL store makes for its witnesses (``.context-compact/`` and
``heads/`` under the work directory) are 0700, parents included."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from click.testing import CliRunner

from context_compact import Compactor, Policy
from context_compact.cli import main
from context_compact.store import witness, workdir_store


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_witness_folders_of_a_postgresql_store_are_private_parents_included(
    tmp_path: Path,
) -> None:
    old = os.umask(0o022)
    try:
        path = tmp_path / ".context-compact" / "heads" / "instance" / "session"
        witness.write(path, 1, "ab" * 16)
    finally:
        os.umask(old)
    assert path.is_file() and mode(path) == 0o600
    for folder in (path.parent, path.parent.parent, tmp_path / ".context-compact"):
        assert mode(folder) == 0o700, folder


def test_an_exported_file_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    store = workdir_store(tmp_path)
    try:
        c = Compactor(Policy.default(context_limit=50_000), store)
        c.prepare([{"role": "user", "content": "hello"}], "hello")
        sid = c.session_id
    finally:
        store.close()
    assert sid is not None
    out = tmp_path / "out.jsonl"
    old = os.umask(0o022)
    try:
        result = CliRunner().invoke(
            main, ["export", sid, "-o", str(out), "--workdir", str(tmp_path)]
        )
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    assert mode(out) == 0o600
    assert "hello" in out.read_text()
