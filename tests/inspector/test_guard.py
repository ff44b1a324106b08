"""The inspector answers only this machine's browser at its own origin: a real server on
127.0.0.1, asked with raw ``http.client`` requests whose Host, Origin and Sec-Fetch-Site are
forged as a DNS-rebinding page or another site's page would send them."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator

import pytest
from inspector_sessions import serving, tool_loop

from context_compact import MemoryStore
from context_compact.cli.compact import replay_policy
from context_compact.inspector import Inspector

OWN = {"X-Context-Compact": "inspector"}


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Inspector, int, str]]:
    store = MemoryStore()
    sid = tool_loop(store, 3, limit=2_000)
    inspector = Inspector(store, compare=replay_policy)
    for url in serving(inspector):
        yield inspector, int(url.rsplit(":", 1)[1].strip("/")), sid


def ask(port: int, path: str, headers: dict[str, str]) -> tuple[int, str, str]:
    """GET ``path`` from 127.0.0.1:port with exactly these headers (Host among them)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.putrequest("GET", path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read().decode()
    finally:
        connection.close()


def test_a_rebound_host_name_is_refused_before_any_session_is_read(
    served: tuple[Inspector, int, str],
) -> None:
    inspector, port, sid = served
    for path in ("/", "/app.js", "/api/sessions", f"/api/session?id={sid}"):
        for host in (f"attacker.example:{port}", "attacker.example", f"127.0.0.1:{port + 1}"):
            status, kind, body = ask(port, path, {"Host": host, **OWN})
            assert status == 421, (path, host)
            assert kind.startswith("text/plain") and len(body.splitlines()) == 1
            assert sid not in body and "127.0.0.1" in body
        status, _, body = ask(port, path, {**OWN})  # no Host at all
        assert status == 421
    assert sid not in inspector.loaded


def test_the_loopback_names_at_the_bound_port_are_answered(
    served: tuple[Inspector, int, str],
) -> None:
    _, port, sid = served
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"LocalHost:{port}"):
        status, _, body = ask(port, "/api/sessions", {"Host": host, **OWN})
        assert status == 200, body
        assert [s["id"] for s in json.loads(body)["sessions"]] == [sid]
        same = {"Host": host, "Origin": f"http://{host}", "Sec-Fetch-Site": "same-origin", **OWN}
        assert ask(port, "/api/sessions", same)[0] == 200
        assert ask(port, "/", {"Host": host})[0] == 200


def test_another_origin_cannot_ask_the_api(served: tuple[Inspector, int, str]) -> None:
    inspector, port, sid = served
    host = f"127.0.0.1:{port}"
    for origin in ("http://attacker.example", "null", f"http://localhost:{port + 1}"):
        status, kind, body = ask(port, f"/api/session?id={sid}", {"Host": host, "Origin": origin})
        assert status == 403 and kind.startswith("text/plain"), origin
        assert len(body.splitlines()) == 1 and sid not in body
        forged = {"Host": host, "Origin": origin, **OWN}  # even with the page's header
        assert ask(port, f"/api/session?id={sid}", forged)[0] == 403
    for site in ("cross-site", "same-site"):
        status, _, body = ask(port, "/api/sessions", {"Host": host, "Sec-Fetch-Site": site, **OWN})
        assert status == 403 and site in body
    assert sid not in inspector.loaded


def test_a_replay_cannot_be_started_by_a_request_a_form_or_an_image_can_send(
    served: tuple[Inspector, int, str],
) -> None:
    """No Origin and no Sec-Fetch-Site (an older browser's ``<img src>`` or GET form): the
    API still answers only with the page's own header, which needs a preflight cross-site."""
    inspector, port, sid = served
    host = f"127.0.0.1:{port}"
    for path in (f"/api/session?id={sid}", f"/api/compare?id={sid}&a=default&b=none"):
        status, kind, body = ask(port, path, {"Host": host})
        assert status == 403 and kind.startswith("text/plain")
        assert "X-Context-Compact: inspector" in body
    assert sid not in inspector.loaded
    status, _, body = ask(port, f"/api/session?id={sid}", {"Host": host, **OWN})
    assert status == 200 and sid in inspector.loaded
    # A link from elsewhere may still open the page itself: it holds no data.
    page = {"Host": host, "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}
    assert ask(port, "/", page)[0] == 200
