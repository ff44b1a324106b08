"""The inspector's undo: a POST only the page's own script can make (its origin, its header,
the server's token), taking back the newest compaction as ``context-compact undo`` does; the
page's button, in headless Chromium; undone compactions stay in the events, marked."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from inspector_sessions import serving, tool_loop

from context_compact import MemoryStore
from context_compact.cli.compact import replay_policy
from context_compact.inspector import Inspector
from context_compact.session.records import Undo, journal

OWN = {"X-Context-Compact": "inspector"}


@pytest.fixture
def served() -> Iterator[tuple[Inspector, int, str, MemoryStore]]:
    store = MemoryStore()
    sid = tool_loop(store, 12, limit=2_000)
    inspector = Inspector(store, compare=replay_policy)
    for url in serving(inspector):
        yield inspector, int(url.rsplit(":", 1)[1].strip("/")), sid, store


def send(port: int, method: str, path: str, headers: dict[str, str]) -> tuple[int, str]:
    """``method path`` to 127.0.0.1:port with exactly these headers (Host among them)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.putheader("Content-Length", "0")
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def undos(store: MemoryStore, sid: str) -> int:
    return sum(isinstance(r, Undo) for r in journal(store.records(sid)))


def test_only_the_pages_own_script_with_the_servers_token_can_undo(
    served: tuple[Inspector, int, str, MemoryStore],
) -> None:
    _, port, sid, store = served
    host = f"127.0.0.1:{port}"
    page = {"Host": host, "Origin": f"http://{host}", "Sec-Fetch-Site": "same-origin", **OWN}
    status, body = send(port, "GET", "/api/sessions", page)
    token = json.loads(body)["token"]
    assert status == 200 and len(token) >= 24
    path = f"/api/undo?id={sid}"
    with_token = {**page, "X-Context-Compact-Token": token}
    refused = [
        page,  # no token
        {**page, "X-Context-Compact-Token": token[:-1] + "x"},  # a wrong one
        # A form another site posts: its origin, no custom header, no token.
        {"Host": host, "Origin": "https://attacker.example", "Sec-Fetch-Site": "cross-site"},
        {**with_token, "Origin": "https://attacker.example"},
        {**with_token, "Sec-Fetch-Site": "cross-site"},
        {k: v for k, v in with_token.items() if k != "Origin"},
        {k: v for k, v in with_token.items() if k != "X-Context-Compact"},
        {**with_token, "Host": f"attacker.example:{port}"},
    ]
    for headers in refused:
        status, body = send(port, "POST", path, headers)
        assert status in (403, 421), (headers, status, body)
        assert token not in body
    assert send(port, "POST", f"/api/compare?id={sid}", with_token)[0] == 404
    assert undos(store, sid) == 0
    status, body = send(port, "POST", path, with_token)
    assert status == 200, body
    done = json.loads(body)
    assert "undone" in done["note"] and done["tokens_after"] > done["tokens_before"]
    assert undos(store, sid) == 1
    # A token writes once; the answer carries the page's next one.
    assert send(port, "POST", path, with_token)[0] == 403
    assert done["token"] != token and len(done["token"]) >= 24
    # The page sees the session again as the journal now holds it: the undone one marked.
    status, body = send(port, "GET", f"/api/events?id={sid}", page)
    rows = json.loads(body)["rows"]
    assert [r["stage"] for r in rows if r["undone"]] in (["summarize"], ["clear_old_results"])
    assert rows[-1]["stage"] == "undo_compaction" and not rows[-1]["undone"]


def test_the_undo_button_takes_back_the_newest_compaction_and_marks_it(
    page: Any, served: tuple[Inspector, int, str, MemoryStore]
) -> None:
    _, port, sid, store = served
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto(f"http://127.0.0.1:{port}/")
    page.wait_for_selector("body[data-ready]")
    assert page.locator("#undo").is_visible()
    assert page.locator("tr.event-row.undone").count() == 0
    page.click("#undo")
    page.wait_for_selector("tr.event-row.undone")
    # The rows are drawn before the request view finishes loading; the facts come after both.
    page.wait_for_function("document.getElementById('undo-facts').textContent !== ''")
    assert "undone" in page.locator("#undo-facts").text_content()
    assert "(undone)" in page.locator("tr.event-row.undone").first.text_content()
    assert undos(store, sid) == 1


def _raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_no_answer_of_the_inspector_may_be_framed_by_another_page(
    served: tuple[Inspector, int, str, MemoryStore],
) -> None:
    _, port, sid, _ = served
    host = f"127.0.0.1:{port}"
    page = {"Host": host, "Origin": f"http://{host}", "Sec-Fetch-Site": "same-origin", **OWN}
    asked = [
        ("GET", "/", {"Host": host}),
        ("GET", "/app.js", {"Host": host}),
        ("GET", f"/api/session?id={sid}", page),
        ("GET", "/api/nothing", page),
        ("GET", "/", {"Host": "attacker.example"}),  # refused: 421
        ("GET", "/api/sessions", {"Host": host}),  # refused: 403
        ("POST", f"/api/undo?id={sid}", page),  # refused: no token
        ("PUT", "/", {"Host": host}),  # http.server's own 501
    ]
    for method, path, headers in asked:
        text = _raw(port, _request(method, path, headers)).decode("latin-1")
        head = text.split("\r\n\r\n", 1)[0].lower()
        assert "content-security-policy: frame-ancestors 'none'" in head, (method, path, head)
        assert "x-frame-options: deny" in head, (method, path, head)
    long_header = b"GET / HTTP/1.1\r\nX-Long: " + b"x" * 70_000 + b"\r\n\r\n"  # 431
    broken = _raw(port, long_header).decode("latin-1").lower()
    assert broken.startswith("http/") and "x-frame-options: deny" in broken


def _request(method: str, path: str, headers: dict[str, str]) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join([*lines, "Content-Length: 0", "Connection: close", "", ""])).encode()


def test_each_page_gets_a_write_token_of_its_own_and_only_recent_pages_keep_theirs(
    served: tuple[Inspector, int, str, MemoryStore],
) -> None:
    _, port, sid, store = served
    host = f"127.0.0.1:{port}"
    page = {"Host": host, "Origin": f"http://{host}", "Sec-Fetch-Site": "same-origin", **OWN}
    tokens = [json.loads(send(port, "GET", "/api/sessions", page)[1])["token"] for _ in range(18)]
    assert len(set(tokens)) == 18
    path = f"/api/undo?id={sid}"
    for old in tokens[:2]:  # pushed out by 16 newer pages
        assert send(port, "POST", path, {**page, "X-Context-Compact-Token": old})[0] == 403
    assert undos(store, sid) == 0
    status, body = send(port, "POST", path, {**page, "X-Context-Compact-Token": tokens[2]})
    assert status == 200, body
    assert undos(store, sid) == 1
