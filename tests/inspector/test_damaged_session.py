"""A store with one damaged session: the inspector answers every request, the damaged
session's own with one line saying what is wrong with it, the others as usual; the terminal
shows no traceback."""

from __future__ import annotations

import http.client
import json
from pathlib import Path

import pytest
from inspector_sessions import serving

from context_compact import Compactor, FileStore, Policy
from context_compact.inspector import Inspector


def _two_sessions(root: Path) -> None:
    for sid in ("good", "bad"):
        c = Compactor(Policy.default(context_limit=12_000), FileStore(root), session=sid)
        view = c.prepare([{"role": "user", "content": f"hello {sid}"}], "hello")
        more = [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "more"}]
        c.prepare([*view, *more], "more")
    (root / ".transcripts" / "sessions" / "bad.jsonl").write_bytes(b"garbage\n")


def _get(port: int, path: str) -> tuple[int, dict[str, object]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        headers = {"Host": f"127.0.0.1:{port}", "X-Context-Compact": "inspector"}
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_one_damaged_session_gets_one_line_answers_and_the_others_are_served(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _two_sessions(tmp_path)
    for url in serving(Inspector(FileStore(tmp_path))):
        port = int(url.rsplit(":", 1)[1].strip("/"))
        status, listed = _get(port, "/api/sessions")
        assert status == 200 and listed["selected"] == "good"
        assert {s["id"] for s in listed["sessions"]} == {"good", "bad"}  # type: ignore[union-attr]
        for path in (
            "/api/session?id=bad",
            "/api/events?id=bad",
            "/api/view?id=bad&request=1",
            "/api/search?id=bad&q=hello",
            "/api/archive?id=bad&path=x",
        ):
            status, body = _get(port, path)
            assert status == 500, path
            error = str(body["error"])
            assert "bad.jsonl" in error and "\n" not in error, path
        assert _get(port, "/api/session?id=good")[0] == 200
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
