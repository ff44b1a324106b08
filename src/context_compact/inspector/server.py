"""The inspector page on 127.0.0.1: the standard library's ``http.server``, the page's own
files from the package (``static/``), and a small JSON API over ``data.py``.

    GET /                          the page (index.html, app.js, app.css: nothing from outside)
    GET /api/sessions              {"sessions": [...], "selected": the session to open on}
    GET /api/session?id=           what the page draws at once (``Inspection.summary``)
    GET /api/events?id=&offset=    the events table, a page of rows at a time
    GET /api/view?id=&request=N    request N's messages exactly as sent, and their links
    GET /api/archive?id=&path=     the archived original behind a path the store issued
    GET /api/search?id=&q=&offset= the engine's recall over the whole session
    GET /api/compare?id=&a=&b=&limit=   compact --dry-run of two policies, side by side
    POST /api/undo?id=             undo the session's newest compaction (``undo.py``)

A session is replayed once, on its first request, and kept (a 10,000-request session is a
few lists of numbers plus its distinct messages); views are cut from it on demand, so the
page loads with the chart alone. One lock serializes the store: SQLite connections are not
shared between threads at once, and the page asks for little.

Every request passes ``guard.refusal`` first: a loopback Host at the bound port, and for the
API the page's own origin and its header (``X-Context-Compact: inspector``). The one write, a
POST, passes ``guard.post_refusal``: also a token of the page's own (``Inspector.page_token``:
each ``/api/sessions`` answer, one per page load, carries a new one). A token writes once: the
POST's answer carries the page's next one, and only the newest ``PAGE_TOKENS`` pages' tokens
are kept. Every answer, a refusal or an error of ``http.server`` included, forbids framing
(``Content-Security-Policy: frame-ancestors 'none'`` and ``X-Frame-Options: DENY``): a page
of another origin cannot lay the inspector under its own and have the user's click (and the
confirm's OK) land on Undo.
"""

from __future__ import annotations

import hmac
import json
import secrets
import sys
import threading
from collections import OrderedDict
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..errors import StoreError
from ..store.base import STORE_ERRORS, Store
from .data import (
    Inspection,
    InspectorError,
    Replay,
    archive,
    compare,
    policy_names,
    sessions,
    worth_showing,
)
from .guard import post_refusal, refusal
from .undo import undo_newest

STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/app.css": ("app.css", "text/css; charset=utf-8"),
}


PAGE_TOKENS = 16
"""Pages whose write token is kept (a page asks ``/api/sessions`` once per load)."""
FRAMING = (
    ("Content-Security-Policy", "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
    ("X-Frame-Options", "DENY"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
)
"""Headers of every answer: no page of any origin may frame this one."""


API = (
    "/api/sessions",
    "/api/session",
    "/api/events",
    "/api/view",
    "/api/archive",
    "/api/search",
    "/api/compare",
)


def asset(name: str) -> str:
    """One of the page's files, as shipped in the package."""
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


class Inspector:
    """The API without HTTP: ``answer(path, query)`` is what the handler sends."""

    def __init__(
        self, store: Store, only: str | None = None, compare: Replay | None = None
    ) -> None:
        self.store = store
        self.only = only
        self.replay = compare
        self.lock = threading.Lock()
        self.loaded: dict[str, Inspection] = {}
        self._tokens: OrderedDict[str, None] = OrderedDict()
        self._tokens_lock = threading.Lock()

    def page_token(self) -> str:
        """A new write token for one page (only that page's script reads it)."""
        token = secrets.token_urlsafe(24)
        with self._tokens_lock:
            self._tokens[token] = None
            while len(self._tokens) > PAGE_TOKENS:
                self._tokens.popitem(last=False)
        return token

    def spend(self, given: str) -> bool:
        """Whether ``given`` is a live page token; it is used up if so (compared in constant
        time against each)."""
        with self._tokens_lock:
            for token in self._tokens:
                if hmac.compare_digest(given.encode(), token.encode()):
                    del self._tokens[token]
                    return True
        return False

    def inspection(self, session: str) -> Inspection:
        if self.only is not None and session != self.only:
            raise InspectorError(f"this page shows session {self.only} only, not {session!r}")
        with self.lock:
            if session not in self.loaded:
                self.loaded[session] = Inspection.load(self.store, session)
            return self.loaded[session]

    def answer(self, path: str, query: dict[str, str]) -> Any:
        sid = query.get("id", "")
        if path == "/api/sessions":
            with self.lock:
                listed = sessions(self.store)
                if self.only is not None:
                    listed = [s for s in listed if s["id"] == self.only]
                selected = self.only or worth_showing(self.store, listed)
            return {
                "sessions": listed,
                "selected": selected,
                "policies": policy_names(),
                "token": self.page_token(),
            }
        if path not in API:
            raise LookupError(path)
        found = self.inspection(sid)
        if path == "/api/session":
            return found.summary()
        if path == "/api/events":
            return found.events_page(_number(query, "offset", 0))
        with self.lock:
            if path == "/api/view":
                return found.view_payload(self.store, _number(query, "request"))
            if path == "/api/archive":
                return archive(self.store, sid, query.get("path", ""))
            if path == "/api/search":
                return found.search(self.store, query.get("q", ""), _number(query, "offset", 0))
            if path == "/api/compare":
                if self.replay is None:
                    raise InspectorError("this page was started without a policy replay")
                limit = _number(query, "limit", found.summary()["compare_limit"])
                a, b = query.get("a", ""), query.get("b", "")
                return compare(self.store, sid, a, b, limit, self.replay)
        raise LookupError(path)

    def act(self, path: str, query: dict[str, str]) -> Any:
        """A POST the guard let through: undo the newest compaction of session ``id``; the
        session is replayed again on its next request."""
        if path != "/api/undo":
            raise LookupError(path)
        sid = query.get("id", "")
        if self.only is not None and sid != self.only:
            raise InspectorError(f"this page shows session {self.only} only, not {sid!r}")
        with self.lock:
            done = undo_newest(self.store, sid)
            self.loaded.pop(sid, None)
        return done


_UNREADABLE: tuple[type[Exception], ...] = (StoreError, *STORE_ERRORS)


def _line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def _number(query: dict[str, str], name: str, default: int | None = None) -> int:
    raw = query.get(name)
    if raw is None and default is not None:
        return default
    try:
        return int(raw or "")
    except ValueError:
        raise InspectorError(f"{name} must be a whole number, not {raw!r}") from None


class _Handler(BaseHTTPRequestHandler):
    server: InspectorServer

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        refused = refusal(url.path, self.headers, self.server.server_address[1])
        if refused is not None:
            status, line = refused
            self._send(status, "text/plain; charset=utf-8", (line + "\n").encode())
            return
        if url.path in STATIC:
            name, kind = STATIC[url.path]
            self._send(HTTPStatus.OK, kind, asset(name).encode())
            return
        self._answer(url.path, url.query, self.server.inspector.answer)

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        inspector = self.server.inspector
        port = self.server.server_address[1]
        refused = post_refusal(url.path, self.headers, port, inspector.spend)
        if refused is not None:
            status, line = refused
            self._send(status, "text/plain; charset=utf-8", (line + "\n").encode())
            return
        self._answer(url.path, url.query, inspector.act, {"token": inspector.page_token()})

    def _answer(
        self, path: str, raw: str, answer: Any, extra: dict[str, str] | None = None
    ) -> None:
        query = {k: v[-1] for k, v in parse_qs(raw).items()}
        try:
            body, status = answer(path, query), HTTPStatus.OK
        except LookupError:
            body, status = {"error": f"no such page: {path}"}, HTTPStatus.NOT_FOUND
        except InspectorError as error:
            body, status = {"error": str(error)}, HTTPStatus.BAD_REQUEST
        except _UNREADABLE as error:  # a damaged session: its own answer says so
            body = {"error": f"cannot read the store: {_line(error)}"}
            status = HTTPStatus.INTERNAL_SERVER_ERROR
        except Exception as error:  # never a request left unanswered, nor a traceback
            body = {"error": f"the inspector failed: {type(error).__name__}: {_line(error)}"}
            status = HTTPStatus.INTERNAL_SERVER_ERROR
        if extra is not None and isinstance(body, dict):
            body = {**body, **extra}
        data = json.dumps(body, ensure_ascii=False, default=str).encode()
        self._send(status, "application/json; charset=utf-8", data)

    def _send(self, status: HTTPStatus, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def end_headers(self) -> None:
        # Here rather than in _send: http.server's own error answers pass here too.
        for name, value in FRAMING:
            self.send_header(name, value)
        super().end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal shows the address, not a line per request."""


class InspectorServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, inspector: Inspector, port: int = 0) -> None:
        self.inspector = inspector
        super().__init__(("127.0.0.1", port), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A browser that went away mid-answer (a reload, a closed tab) is not an error."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"


__all__ = ["Inspector", "InspectorServer", "asset"]
