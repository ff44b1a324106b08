"""Who the inspector answers: a browser on this machine, at the page's own origin.

The server listens on 127.0.0.1 only, but a listening socket is not enough: a page on any
site can have the browser send requests to 127.0.0.1 (an ``<img>``, a form, a ``fetch``), and
with DNS rebinding a name of the attacker's can resolve to 127.0.0.1 so that the browser
treats the inspector as that site and lets its script read the answers. So every request is
checked before it is answered, and a refusal is a short plain-text line:

* ``Host`` must name this machine's loopback (``127.0.0.1``, ``localhost``, ``[::1]``) with
  the port the server is bound to (421 otherwise): a rebound name never matches.
* The API (``/api/...``) answers only same-origin requests (403 otherwise): an ``Origin``
  header must be the server's own origin (``http://`` + the accepted Host), and a
  ``Sec-Fetch-Site`` header, where the browser sends one, must be ``same-origin`` or ``none``
  (typed in the address bar).
* Every API answer costs a replay of a session or of two policies, so the API also requires
  the header ``X-Context-Compact: inspector``: a cross-site page can only send a custom header
  after a CORS preflight (``OPTIONS``), which this server does not grant, and a form or an
  ``<img>`` cannot send one at all. That covers browsers too old to send ``Sec-Fetch-Site``.

The page itself (``/``, its script and style) holds no data, so a link from elsewhere may open
it; its script then asks the API from the page's own origin.

One request writes: ``POST /api/undo`` (``post_refusal``). Besides the checks above it needs an
``Origin`` (every browser sends one with a POST) naming the page's own, and the header
``X-Context-Compact-Token`` holding a token the server gave this page (``/api/sessions`` makes
one per page load, an answer only the page's own script can read; each writes once, and the
POST's answer carries the next). A form posted from another site sends neither header; a
script of another site cannot send them without the preflight this server never grants; and
no page of another origin can frame this one to borrow the user's click (``server.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Protocol

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
API_HEADER = "X-Context-Compact"
API_HEADER_VALUE = "inspector"
SAME_ORIGIN_FETCH = ("same-origin", "none")
TOKEN_HEADER = "X-Context-Compact-Token"
POSTS = ("/api/undo",)


class Headers(Protocol):
    def get(self, name: str) -> str | None: ...


def accepted_host(host: str | None, port: int) -> str | None:
    """The Host header, lower-cased, when it names loopback at ``port``; else None."""
    if not host:
        return None
    host = host.strip().lower()
    if host.startswith("["):
        name, _, rest = host.partition("]")
        name, given = name + "]", rest.removeprefix(":") if rest else None
    else:
        name, sep, given = host.partition(":")
        given = given if sep else None
    # Only the default port may go unsaid: a browser names any other.
    if name not in LOOPBACK or (given or "80") != str(port):
        return None
    return host


def refusal(path: str, headers: Headers, port: int) -> tuple[HTTPStatus, str] | None:
    """Why a GET of ``path`` with these headers is not answered (status, one line), or None."""
    host = accepted_host(headers.get("Host"), port)
    if host is None:
        return (
            HTTPStatus.MISDIRECTED_REQUEST,
            f"this inspector answers only at 127.0.0.1:{port}, localhost:{port} or "
            f"[::1]:{port}, not at Host {headers.get('Host')!r}",
        )
    if not path.startswith("/api/"):
        return None
    origin = headers.get("Origin")
    if origin is not None and origin.strip().lower() != f"http://{host}":
        return (
            HTTPStatus.FORBIDDEN,
            f"the inspector's API answers its own page only, not a page of {origin}",
        )
    site = headers.get("Sec-Fetch-Site")
    if site is not None and site.strip().lower() not in SAME_ORIGIN_FETCH:
        return (
            HTTPStatus.FORBIDDEN,
            f"the inspector's API answers its own page only, not a {site} request",
        )
    if (headers.get(API_HEADER) or "").strip() != API_HEADER_VALUE:
        return (
            HTTPStatus.FORBIDDEN,
            f"the inspector's API needs the header {API_HEADER}: {API_HEADER_VALUE}",
        )
    return None


def post_refusal(
    path: str, headers: Headers, port: int, spend: Callable[[str], bool]
) -> tuple[HTTPStatus, str] | None:
    """Why a POST of ``path`` with these headers is not answered, or None (see the module
    docstring): the API's checks, an ``Origin`` of the page's own, a page's live token
    (``spend(token)`` answers whether it is one, and uses it up)."""
    if path not in POSTS:
        return HTTPStatus.NOT_FOUND, f"nothing to post at {path}"
    refused = refusal(path, headers, port)
    if refused is not None:
        return refused
    if headers.get("Origin") is None:
        return HTTPStatus.FORBIDDEN, "the inspector writes only when its own page asks"
    given = (headers.get(TOKEN_HEADER) or "").strip()
    if not given or not spend(given):
        return HTTPStatus.FORBIDDEN, f"the inspector writes only with its page's {TOKEN_HEADER}"
    return None


__all__ = [
    "API_HEADER",
    "API_HEADER_VALUE",
    "LOOPBACK",
    "POSTS",
    "TOKEN_HEADER",
    "accepted_host",
    "post_refusal",
    "refusal",
]
