"""``inspect ID --serve|--html`` and ``ui`` from the command line: bad input is one line."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from click.testing import CliRunner
from inspector_sessions import tool_loop

from context_compact.cli import main
from context_compact.store import WORKDIR_DB, workdir_store


def stored_session(workdir: Path, turns: int = 6) -> str:
    store = workdir_store(workdir)
    try:
        return tool_loop(store, turns, limit=2_000)
    finally:
        store.close()


def test_html_writes_one_file_that_names_nothing_outside(tmp_path: Path) -> None:
    sid = stored_session(tmp_path)
    out = CliRunner().invoke(
        main, ["inspect", sid, "--html", str(tmp_path / "r.html"), "--workdir", str(tmp_path)]
    )
    assert out.exit_code == 0, out.output
    assert out.output.startswith(f"wrote {tmp_path / 'r.html'} (")
    page = (tmp_path / "r.html").read_text()
    assert 'id="cc-data"' in page and "<script src=" not in page


def test_an_unknown_session_is_one_line(tmp_path: Path) -> None:
    stored_session(tmp_path, 2)
    for args in (["--serve"], ["--html", str(tmp_path / "x.html")]):
        out = CliRunner().invoke(main, ["inspect", "nope", *args, "--workdir", str(tmp_path)])
        assert out.exit_code == 1 and "Usage:" not in out.output
        assert "no session 'nope'" in out.output and "Traceback" not in out.output
    assert not (tmp_path / "x.html").exists()


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    sid = stored_session(tmp_path, 2)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        for args in (["inspect", sid, "--serve"], ["ui"]):
            out = CliRunner().invoke(main, [*args, "--port", port, "--workdir", str(tmp_path)])
            assert out.exit_code == 1
            assert out.output == (
                f"Error: port {port} on 127.0.0.1 is in use: pick another with --port "
                "(0: any free one)\n"
            )


def test_a_store_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / WORKDIR_DB
    db.parent.mkdir(parents=True)
    db.write_bytes(b"not a database, just bytes " * 100)
    for args in (["ui"], ["inspect", "abc", "--serve"]):
        out = CliRunner().invoke(main, [*args, "--workdir", str(tmp_path)])
        assert out.exit_code == 1
        # One line naming the file and SQLite's answer (the store's own CorruptStore).
        assert out.output.startswith("Error: ") and "sessions.db" in out.output
        assert "not a database" in out.output and len(out.output.splitlines()) == 1


def test_ui_serves_the_stores_sessions_until_interrupted(tmp_path: Path) -> None:
    first, second = stored_session(tmp_path, 3), stored_session(tmp_path, 4)
    process = subprocess.Popen(
        [sys.executable, "-m", "context_compact.cli", "ui", "--port", "0"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith(f"inspector for the sessions of {tmp_path} at http://127.0.0.1:")
        url = line.split(" at ", 1)[1].split()[0]
        own = {"X-Context-Compact": "inspector"}  # the page's header, which the API asks for
        with urllib.request.urlopen(
            urllib.request.Request(url + "api/sessions", headers=own)
        ) as response:
            listed = json.load(response)
        assert [s["id"] for s in listed["sessions"]] == [second, first]
        asked = urllib.request.Request(url + f"api/session?id={first}", headers=own)
        with urllib.request.urlopen(asked) as response:
            assert len(json.load(response)["tokens"]) == 3
    finally:
        process.send_signal(signal.SIGINT)
        rest = process.communicate(timeout=30)[0]
    assert process.returncode == 0 and "Traceback" not in rest
